# Extension (KEP-12): operators/kep12-extension extends operators/kep12-base. It keeps
# the base's deploy plan, adds `load` and `clear` plans, and patches the base's backup
# Job. The base is found in the sibling folder, by the name and version the extension's
# `extends:` names. Run an added plan by adding its entry to `plan_triggers`, for example
# `terraform apply -var 'triggers={load="1"}'`.

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

variable "triggers" {
  description = "Plans to run: plan name -> token; a new entry or a changed token runs the plan."
  type        = map(string)
  default     = {}
}

provider "kudo" {}

resource "kudo_operator" "db" {
  package   = "${path.module}/operators/kep12-extension"
  namespace = var.namespace
}

resource "kudo_instance" "db" {
  name          = "db"
  namespace     = var.namespace
  operator      = kudo_operator.db.id
  plan_triggers = var.triggers
}

output "last_plan" {
  description = "The plan the last apply ran."
  value       = kudo_instance.db.last_plan
}

output "operator_version_name" {
  description = "The OperatorVersion object of the extension (the base's plans plus its own)."
  value       = kudo_operator.db.operator_version_name
}
