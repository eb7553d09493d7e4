variable "name" {
  description = "Whose cache (the DaemonSet is <name>-model-cache)."
  type        = string
}

variable "namespace" {
  type = string
}

variable "labels" {
  type = map(string)
}

variable "image" {
  description = "The voicemesh image (it runs `voicemesh models fetch`)."
  type        = string
}

variable "workload" {
  description = "The model-fetch process (voicemesh.workloads, container layout)."
  type = object({
    argv   = list(string)
    env    = map(string)
    mounts = map(object({ path = string, mount_path = string }))
  })
}

variable "model_source" {
  description = "The bucket mirror (https or file URL) the fetch reads."
  type        = string
}

variable "secrets" {
  description = "As k8s-common's (the fetch mounts none; the type is shared)."
  type = object({
    region_keys = string
    api_keys    = string
    admin_keys  = string
    region_tls  = string
    region_ca   = string
  })
}

variable "model_cache_path" {
  description = "The node-local directory it fills."
  type        = string
}

variable "node_selector" {
  type = map(string)
}

variable "tolerations" {
  type    = list(object({ key = string, operator = string, effect = string }))
  default = []
}
