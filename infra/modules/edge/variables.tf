variable "name" {
  type    = string
  default = "edge"
}

variable "namespace" {
  type    = string
  default = "voicemesh"
}

variable "image" {
  description = "The voicemesh image (runs `voicemesh edge serve`)."
  type        = string
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

variable "api_keys_secret" {
  description = "Existing Secret with key VOICEMESH_API_KEYS (comma-separated); never in Terraform state."
  type        = string
}

variable "redis_url" {
  description = "Shared Redis for sessions, client secrets and circuit-breaker state across replicas."
  type        = string
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

variable "service_annotations" {
  type    = map(string)
  default = {}
}

variable "region_keys_secret" {
  description = "Existing Secret with the region key set under region-keys.json (the same one the regions mount): the edge signs its region tokens with it. Never in Terraform state."
  type        = string
}

variable "region_ca_secret" {
  description = "Existing Secret with ca.crt, the CA that signed the regions' TLS certificates (https/wss region URLs). Empty: system CAs."
  type        = string
  default     = ""
}

variable "drain_seconds" {
  description = "On SIGTERM, how long running answers may take to finish before sessions are told to resume on another edge (VOICEMESH_DRAIN_S)."
  type        = number
  default     = 20
}

variable "prestop_seconds" {
  description = "preStop wait before SIGTERM, so the Service stops sending new clients to a terminating pod first."
  type        = number
  default     = 5
}
