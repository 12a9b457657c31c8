# Conditional dependency: the `shop` package runs the `metrics` package as a child
# Instance through a KudoOperator task whose enablingParameter is MONITORING_ENABLED.
# Turning `monitoring` on and off adds and removes the child and its objects in place,
# for example `terraform apply -var monitoring=true`.

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

variable "monitoring" {
  description = "Run the metrics child instance."
  type        = bool
  default     = false
}

variable "scrape_interval" {
  description = "Collection interval handed down to the metrics child."
  type        = string
  default     = "30s"
}

provider "kudo" {}

# Resolves the dependency tree (here ../metrics next to the package) at plan time; both
# OperatorVersions are installed whether or not an instance turns the child on.
resource "kudo_operator" "shop" {
  package   = "${path.module}/operators/shop"
  namespace = var.namespace
}

resource "kudo_instance" "shop" {
  name      = "shop"
  namespace = var.namespace
  operator  = kudo_operator.shop.id

  parameters = {
    # KUDO parameters are strings; the package declares this one as a boolean.
    MONITORING_ENABLED = tostring(var.monitoring)
    SCRAPE_INTERVAL    = var.scrape_interval
  }
}

output "install_order" {
  description = "OperatorVersions in the order the operator resource installs them."
  value       = kudo_operator.shop.install_order
}

output "children" {
  description = "The child instances of the shop, including disabled ones."
  value = [for c in kudo_instance.shop.children : {
    name       = c.name
    operator   = "${c.operator}-${c.operator_version}"
    enabled    = c.enabled
    parameters = c.parameters
  }]
}

output "running_children" {
  description = "Names of the child Instances that exist in the cluster."
  value       = [for c in kudo_instance.shop.children : c.name if c.enabled]
}
