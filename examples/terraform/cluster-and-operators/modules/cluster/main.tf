# Stands in for a module that creates a Kubernetes cluster (EKS, GKE, AKS, kind, ...).
# We cannot create a real cluster in an example, so this module receives the connection
# of an existing one and passes it through a terraform_data resource. What matters is
# what the root module sees: like a real cluster module's, these outputs are known only
# after the module's resources are created, so the first plan has them unknown.

variable "host" {
  description = "URL of the cluster's API server."
  type        = string
}

variable "token" {
  description = "Bearer token; empty when a client certificate is used."
  type        = string
  sensitive   = true
}

variable "cluster_ca_certificate" {
  description = "PEM of the CA that signed the API server's certificate."
  type        = string
}

variable "client_certificate" {
  description = "PEM client certificate; empty when a token is used."
  type        = string
}

variable "client_key" {
  description = "PEM key of the client certificate."
  type        = string
  sensitive   = true
}

variable "insecure" {
  description = "Skip the API server certificate check (test clusters only)."
  type        = bool
}

# A real module would create the cluster here; its endpoint and credentials would
# be attributes of that resource.
resource "terraform_data" "cluster" {
  input = {
    host                   = var.host
    token                  = var.token
    cluster_ca_certificate = var.cluster_ca_certificate
    client_certificate     = var.client_certificate
    client_key             = var.client_key
    insecure               = var.insecure
  }
}

output "host" {
  description = "API server URL, known after apply."
  value       = terraform_data.cluster.output.host
}

output "token" {
  description = "Bearer token, known after apply."
  value       = terraform_data.cluster.output.token
  sensitive   = true
}

output "cluster_ca_certificate" {
  description = "CA certificate (PEM), known after apply."
  value       = terraform_data.cluster.output.cluster_ca_certificate
}

output "client_certificate" {
  description = "Client certificate (PEM), known after apply."
  value       = terraform_data.cluster.output.client_certificate
}

output "client_key" {
  description = "Client key (PEM), known after apply."
  value       = terraform_data.cluster.output.client_key
  sensitive   = true
}

output "insecure" {
  description = "Whether the API server certificate is not checked."
  value       = terraform_data.cluster.output.insecure
}
