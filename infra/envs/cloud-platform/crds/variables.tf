variable "versions" {
  description = "Pinned Helm chart versions."
  type        = object({ keda = string, prometheus_crds = string, kube_prometheus_stack = string })
}

variable "managed_certificate" {
  description = "The front door's Google-managed certificate: its name and the edge's public name."
  type        = object({ name = string, domain = string })
}
