variable "regions" {
  description = "As modules/cloud-objects' (envs/cloud-workloads reads them from the platform stage's outputs)."
  type = map(object({
    location            = object({ lat = number, lon = number })
    residency           = list(string)
    region_ip           = string
    pod_cidr            = string
    redis_url           = string
    edge_host           = string
    edge_ip_name        = string
    managed_certificate = string
  }))
}

variable "workloads" {
  description = "voicemesh.workloads in the container layout (`voicemesh infra render`)."
  type = map(object({
    argv   = list(string)
    env    = map(string)
    mounts = map(object({ path = string, mount_path = string }))
  }))
}

variable "image" {
  type    = string
  default = "europe-docker.pkg.dev/PROJECT/voicemesh/voicemesh:0.1.0"
}

variable "model_source" {
  type    = string
  default = "https://storage.googleapis.com/PROJECT-voicemesh-models/v1"
}

variable "region_capacity" {
  type    = number
  default = 8
}

variable "edge_tls_secret" {
  type    = string
  default = ""
}

variable "pod_monitor" {
  type    = bool
  default = true
}

variable "llm_image" {
  description = "vLLM's image of the profile's vLLM version: `voicemesh infra render` writes it beside the workloads."
  type        = string
}
