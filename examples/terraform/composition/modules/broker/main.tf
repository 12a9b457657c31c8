terraform {
  required_providers {
    kudo = {
      source = "kudo/kudo"
    }
  }
}

variable "namespace" {
  description = "Namespace of the operator and the instance."
  type        = string
}

variable "zookeeper_connection" {
  description = "ZooKeeper connection string the broker uses."
  type        = string
}

resource "kudo_operator" "broker" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}

resource "kudo_instance" "broker" {
  name      = "broker"
  namespace = var.namespace
  operator  = kudo_operator.broker.id
  parameters = {
    ZK_URI = var.zookeeper_connection
  }
}

output "zk_uri" {
  description = "The ZK_URI value the broker's templates see."
  value       = kudo_instance.broker.effective_parameters["ZK_URI"]
}
