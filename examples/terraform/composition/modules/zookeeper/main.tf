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

variable "size" {
  description = "Number of ZooKeeper nodes."
  type        = number
}

resource "kudo_operator" "zookeeper" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}

resource "kudo_instance" "zk" {
  name      = "zk"
  namespace = var.namespace
  operator  = kudo_operator.zookeeper.id
  parameters = {
    NODE_COUNT = tostring(var.size)
  }
}

output "connection" {
  description = "Client connection string of the ensemble, e.g. `zk-0.zk-hs.default:2181,...`."
  value       = kudo_instance.zk.outputs.CONNECTION
}
