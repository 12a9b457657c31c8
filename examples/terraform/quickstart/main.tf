# Quickstart: install the small "webapp" KUDO operator package from ./operator and run
# one instance of it. The cluster connection comes from KUBE_CONFIG_PATH or KUBECONFIG
# (scripts/quickstart.sh sets it); the namespace must already exist.

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

variable "replicas" {
  description = "Number of web server pods."
  type        = number
  default     = 2
}

variable "message" {
  description = "Text the web page shows."
  type        = string
  default     = "Hello from KUDO on Terraform"
}

provider "kudo" {}

# Writes KUDO's Operator and OperatorVersion objects (and the KUDO CRDs when missing).
resource "kudo_operator" "webapp" {
  package   = "${path.module}/operator"
  namespace = var.namespace
}

# Runs the package's deploy plan and waits until every object is healthy.
resource "kudo_instance" "web" {
  name      = "web"
  namespace = var.namespace
  operator  = kudo_operator.webapp.id

  # KUDO parameters are strings, whatever their declared type.
  parameters = {
    REPLICAS = tostring(var.replicas)
    MESSAGE  = var.message
  }

  timeouts {
    create = "5m"
    update = "5m"
    delete = "5m"
  }
}

output "operator_version" {
  description = "The OperatorVersion object the instance runs."
  value       = kudo_operator.webapp.operator_version_name
}

output "status" {
  description = "Status of the last plan (COMPLETE after a good apply)."
  value       = kudo_instance.web.status
}

output "objects" {
  description = "What the instance created, as kind/name."
  value       = [for o in kudo_instance.web.objects : "${o.kind}/${o.name}"]
}
