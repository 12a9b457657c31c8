# A small reusable module around one KUDO package, with `terraform test` files:
#   tests/unit.tftest.hcl         plan only, `mock_provider "kudo"`: no cluster needed
#   tests/integration.tftest.hcl  `command = apply` against the cluster in
#                                 KUBE_CONFIG_PATH (kube-sim in this repository's tests)
# Run `terraform test` in this folder. Parameters are checked by the provider function
# `validate_parameters` in a precondition, so even the mocked plan rejects bad ones.

terraform {
  required_version = ">= 1.8" # provider functions
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

variable "name" {
  description = "Name of the instance."
  type        = string
  default     = "web"
}

variable "parameters" {
  description = "Parameter values of the webapp package (REPLICAS, MESSAGE, IMAGE)."
  type        = map(string)
  default     = {}
}

locals {
  package = "${path.module}/operator"
  # The diagnostics kudo_instance would give, computed offline.
  problems = provider::kudo::validate_parameters(local.package, var.parameters)
}

resource "kudo_operator" "this" {
  package   = local.package
  namespace = var.namespace
}

resource "kudo_instance" "this" {
  name       = var.name
  namespace  = var.namespace
  operator   = kudo_operator.this.id
  parameters = var.parameters

  lifecycle {
    precondition {
      condition     = length(local.problems) == 0
      error_message = join("\n", [for p in local.problems : "${p.summary}: ${p.detail}"])
    }
  }
}

output "status" {
  description = "COMPLETE once the deploy plan finished."
  value       = kudo_instance.this.status
}

output "rendered" {
  description = "Kind and name of each object the deploy plan renders (offline, before any apply); empty while the parameters are invalid (the precondition says why)."
  value = try(
    [for m in provider::kudo::render(local.package, var.parameters) : "${m.kind}/${m.metadata.name}"],
    [],
  )
}
