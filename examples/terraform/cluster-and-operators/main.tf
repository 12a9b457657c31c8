# Cluster and operators in one apply: the kudo provider is configured from the outputs
# of the module that creates the cluster. On the first `terraform apply` those outputs
# are unknown while planning, so the provider plans without the cluster (packages
# loaded, parameters checked, templates rendered; `preview` and `objects` known after
# apply) and connects once the cluster module has been applied.
# See docs/guides/cluster-and-operators.md.

terraform {
  required_providers {
    kudo = {
      source = "kudo/kudo"
    }
  }
}

# What the stand-in cluster module passes on; a real cluster module needs none of these.
variable "host" {
  description = "URL of the API server of the cluster the stand-in module \"creates\"."
  type        = string
}

variable "token" {
  description = "Bearer token for host (or leave empty and set the client certificate)."
  type        = string
  default     = ""
  sensitive   = true
}

variable "cluster_ca_certificate" {
  description = "PEM of the cluster's CA."
  type        = string
  default     = ""
}

variable "client_certificate" {
  description = "PEM client certificate, instead of a token."
  type        = string
  default     = ""
}

variable "client_key" {
  description = "PEM key of client_certificate."
  type        = string
  default     = ""
  sensitive   = true
}

variable "insecure" {
  description = "Skip the API server certificate check (test clusters only)."
  type        = bool
  default     = false
}

variable "namespace" {
  description = "Existing namespace to install into."
  type        = string
  default     = "default"
}

variable "greeting" {
  description = "What the greeter instance says."
  type        = string
  default     = "hello"
}

module "cluster" {
  source = "./modules/cluster"

  host                   = var.host
  token                  = var.token
  cluster_ca_certificate = var.cluster_ca_certificate
  client_certificate     = var.client_certificate
  client_key             = var.client_key
  insecure               = var.insecure
}

# Every connection setting may come from the cluster module: unknown values are fine.
provider "kudo" {
  host                   = module.cluster.host
  token                  = module.cluster.token
  cluster_ca_certificate = module.cluster.cluster_ca_certificate
  client_certificate     = module.cluster.client_certificate
  client_key             = module.cluster.client_key
  insecure               = module.cluster.insecure
}

resource "kudo_operator" "greeter" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}

resource "kudo_instance" "greeter" {
  name      = "greeter"
  namespace = var.namespace
  operator  = kudo_operator.greeter.id
  parameters = {
    GREETING = var.greeting
  }
}

output "objects" {
  description = "What the instance created, as kind/name."
  value       = [for o in kudo_instance.greeter.objects : "${o.kind}/${o.name}"]
}

output "message" {
  description = "The greeting the package publishes as an output."
  value       = kudo_instance.greeter.outputs.MESSAGE
}
