# Composition: one module runs a small ZooKeeper-like operator, another runs a broker
# that needs ZooKeeper's connection string. The zookeeper package declares the string
# under `outputs:` in its operator.yaml; `kudo_instance.outputs` makes it known at plan
# time, so changing the ZooKeeper size updates both instances in one apply.

terraform {
  required_providers {
    kudo = {
      source = "kudo/kudo"
    }
  }
}

variable "namespace" {
  description = "Existing namespace to install into."
  type        = string
  default     = "default"
}

variable "zookeeper_size" {
  description = "Number of ZooKeeper nodes."
  type        = number
  default     = 3
}

provider "kudo" {}

module "zookeeper" {
  source    = "./modules/zookeeper"
  namespace = var.namespace
  size      = var.zookeeper_size
}

module "broker" {
  source               = "./modules/broker"
  namespace            = var.namespace
  zookeeper_connection = module.zookeeper.connection
}

output "zookeeper_connection" {
  description = "What the zookeeper package publishes as its CONNECTION output."
  value       = module.zookeeper.connection
}

output "broker_zk_uri" {
  description = "The ZK_URI parameter the broker instance runs with."
  value       = module.broker.zk_uri
}
