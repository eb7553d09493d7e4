variable "name" {
  type    = string
  default = "edge"
}

variable "namespace" {
  type    = string
  default = "voicemesh"
}

variable "image" {
  description = "The voicemesh image (`voicemesh edge serve`, `voicemesh models fetch`)."
  type        = string
}

variable "workloads" {
  description = "voicemesh.workloads in the container layout (`voicemesh infra render`): edge, edge_model_fetch."
  type = object({
    edge             = object({ argv = list(string), env = map(string), mounts = map(object({ path = string, mount_path = string })) })
    edge_model_fetch = object({ argv = list(string), env = map(string), mounts = map(object({ path = string, mount_path = string })) })
  })
}

variable "location" {
  description = "Where this edge is (LAT,LON for --location): the router's distance prior."
  type        = object({ lat = number, lon = number })
}

variable "regions" {
  description = "Registry records of the regions this edge routes to (region-k8s `region` outputs)."
  type = list(object({
    id        = string
    url       = string
    location  = object({ lat = number, lon = number })
    residency = list(string)
    capacity  = number
  }))
}

variable "redis_url" {
  description = "This region's Redis (sessions, client secrets, breaker state shared by its edge replicas)."
  type        = string
}

variable "secrets" {
  description = "Names of the Secrets created out of band (docs/deploy.md)."
  type = object({
    region_keys = string
    api_keys    = string
    admin_keys  = string
    region_tls  = string
    region_ca   = string
  })
}

variable "model_source" {
  description = "VOICEMESH_MODEL_SOURCE of the model-fetch init container (the bucket mirror)."
  type        = string
}

variable "model_cache_path" {
  type    = string
  default = "/var/lib/voicemesh/models"
}

variable "host" {
  description = "The public name clients use (the Ingress rule and the certificate's name)."
  type        = string
}

variable "tls_secret" {
  description = "kubernetes.io/tls Secret for the front door; empty: only var.managed_certificate."
  type        = string
  default     = ""
}

variable "managed_certificate" {
  description = "Name of a GKE ManagedCertificate for var.host (created by envs/cloud-platform); empty: only var.tls_secret."
  type        = string
  default     = ""
}

variable "static_ip_name" {
  description = "Name of the reserved global address of the front door (envs/cloud-platform), so DNS can point at it."
  type        = string
}

variable "websocket_timeout_s" {
  description = "Longest a WebSocket stays open through the load balancer (GKE's backend timeout); the client resumes after it."
  type        = number
  default     = 3600
}

variable "cpu_node_selector" {
  type    = map(string)
  default = { "voicemesh.io/pool" = "cpu" }
}

variable "min_replicas" {
  type    = number
  default = 2
}

variable "max_replicas" {
  type    = number
  default = 10
}

variable "prestop_seconds" {
  description = "preStop wait before SIGTERM, so the load balancer stops sending new clients to a terminating pod first."
  type        = number
  default     = 5
}

variable "metrics_token_secret" {
  description = "Existing Secret in var.namespace holding the scraper's metrics credential under the key token (the regions' too). Read by the PodMonitor."
  type        = string
  default     = "voicemesh-region-metrics"
}

variable "pod_monitor" {
  description = "Create a prometheus-operator PodMonitor that scrapes the edge pods with the metrics credential."
  type        = bool
  default     = true
}
