# Version ranges: the `app` package asks for `cache` ">=1.0.0 <2.0.0" through a
# KudoOperator task. The provider resolves the range against the repository at plan
# time (1.2.0 of the 1.0.0, 1.2.0 and 2.0.0 on offer) and `dependency_overrides` can
# pin another version, for example `terraform apply -var 'overrides={cache="1.0.0"}'`.
# Pinning an older version than the child instance runs is a downgrade: the plan refuses
# it unless `-var allow_downgrade=true` is given too.

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

variable "repository_url" {
  description = "Operator repository holding `cache`: an http(s) address serving index.yaml, or a folder. Empty means the folder of packages shipped with this example."
  type        = string
  default     = ""
}

variable "overrides" {
  description = "Dependency versions to use instead of what the packages ask for: package name -> version or range."
  type        = map(string)
  default     = {}
}

variable "allow_downgrade" {
  description = "Let an override run the child instance at an older version than it runs now."
  type        = bool
  default     = false
}

provider "kudo" {
  repository {
    name = "example"
    # A default cannot refer to path.module, hence the empty string meaning "ours".
    url = var.repository_url != "" ? var.repository_url : "${path.module}/repository"
  }
}

resource "kudo_operator" "app" {
  package              = "${path.module}/operators/app"
  namespace            = var.namespace
  dependency_overrides = var.overrides
}

resource "kudo_instance" "app" {
  name            = "app"
  namespace       = var.namespace
  operator        = kudo_operator.app.id
  allow_downgrade = var.allow_downgrade
}

output "cache_version" {
  description = "The cache release the app's child Instance runs."
  value       = one([for c in kudo_instance.app.children : c.operator_version if c.operator == "cache"])
}

output "dependencies" {
  description = "What the operator resource resolved: package, version, and what was asked for."
  value = [for d in kudo_operator.app.dependencies : {
    package    = d.package
    version    = d.operator_version
    constraint = d.constraint
  }]
}

output "install_order" {
  description = "OperatorVersions in the order they are installed."
  value       = kudo_operator.app.install_order
}
