# Getting started: the real zookeeper and kafka packages of KUDO's community repository,
# kafka wired to zookeeper with Terraform references, in a namespace the apply creates.
# The cluster connection comes from KUBE_CONFIG_PATH or KUBECONFIG.
# Walked through in docs/guides/getting-started.md.

terraform {
  required_providers {
    kudo = {
      source = "kudo/kudo"
    }
  }
}

variable "namespace" {
  description = "Namespace to install into; created when missing."
  type        = string
  default     = "kafka-demo"
}

variable "repository_url" {
  description = "KUDO package repository: a URL or folder holding index.yaml."
  type        = string
  default     = "https://kudo-repository.storage.googleapis.com/0.10.0"
}

variable "zookeeper_nodes" {
  description = "Number of ZooKeeper nodes (the package's NODE_COUNT)."
  type        = number
  default     = 3
}

provider "kudo" {
  repository {
    name = "community"
    url  = var.repository_url
  }
}

resource "kudo_operator" "zookeeper" {
  package          = "zookeeper@0.3.3"
  namespace        = var.namespace
  create_namespace = true
}

resource "kudo_operator" "kafka" {
  package          = "kafka@1.3.2"
  namespace        = var.namespace
  create_namespace = true
}

resource "kudo_instance" "zk" {
  name             = "zk"
  namespace        = var.namespace
  operator         = kudo_operator.zookeeper.id
  create_namespace = true

  # KUDO parameters are strings, whatever their declared type.
  parameters = {
    NODE_COUNT = tostring(var.zookeeper_nodes)
  }
}

locals {
  # zookeeper 0.3.3 names its StatefulSet <instance>-zookeeper and its headless Service
  # <instance>-hs; kafka's ZOOKEEPER_URI wants every node's host:port (port: zookeeper's
  # CLIENT_PORT, 2181 by default). The package declares no `outputs`, so the string is
  # built from the instance's own attributes, which also orders kafka after zookeeper.
  zookeeper_uri = join(",", [
    for i in range(var.zookeeper_nodes) :
    "${kudo_instance.zk.name}-zookeeper-${i}.${kudo_instance.zk.name}-hs.${kudo_instance.zk.namespace}.svc:2181"
  ])
}

# kafka's deploy plan starts with a Pipe task (generate-tls-certificates): it runs a pod
# and waits for it to finish, so the cluster needs a node that can schedule that pod.
resource "kudo_instance" "kafka" {
  name             = "kafka"
  namespace        = var.namespace
  operator         = kudo_operator.kafka.id
  create_namespace = true

  parameters = {
    ZOOKEEPER_URI = local.zookeeper_uri
  }
}

output "zookeeper_uri" {
  description = "What kafka was given as ZOOKEEPER_URI."
  value       = local.zookeeper_uri
}

output "kafka_status" {
  description = "Status of kafka's last plan: COMPLETE after a good apply."
  value       = kudo_instance.kafka.status
}

output "kafka_brokers" {
  description = "kafka's broker StatefulSet and Services, as kind/name."
  value = [
    for o in values(kudo_instance.kafka.objects) : "${o.kind}/${o.name}"
    if contains(["StatefulSet", "Service"], o.kind)
  ]
}
