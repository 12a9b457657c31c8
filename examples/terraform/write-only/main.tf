# A password that never reaches the Terraform state or a plan file: an ephemeral input
# variable passed to the write-only `parameters_wo` (Terraform 1.11+ / OpenTofu 1.11+).
#
#   TF_VAR_db_password='...' terraform apply
#
# Terraform sends the value on every plan and apply but keeps nothing of it; the
# instance keeps it in its Secret `<name>-kudo-sensitive`. To change the password, set
# the new value and raise `password_version`: that is what makes the apply use it.

terraform {
  required_version = ">= 1.11" # write-only attributes and ephemeral variables
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

variable "db_password" {
  description = "Password the package renders into the credentials Secret."
  type        = string
  ephemeral   = true # never stored in state or plan files
}

variable "password_version" {
  description = "Raise to send a new db_password."
  type        = number
  default     = 1
}

resource "kudo_operator" "credentials" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}

resource "kudo_instance" "app" {
  name      = "app"
  namespace = var.namespace
  operator  = kudo_operator.credentials.id
  parameters = {
    USERNAME = "app"
  }
  parameters_wo = {
    PASSWORD = var.db_password
  }
  parameters_wo_version = var.password_version
}

output "credentials_secret" {
  description = "The Secret the package renders, holding the password."
  value       = "${kudo_instance.app.name}-credentials"
}
