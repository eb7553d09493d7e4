variable "image" {
  description = "The voicemesh image (entrypoint `voicemesh`, uid 10001, VOICEMESH_HOME=/var/lib/voicemesh)."
  type        = string
}

variable "containers" {
  description = "Container name -> the voicemesh.workloads process it runs, the values of its placeholders, and whether it writes the model volume."
  type = map(object({
    process = object({
      argv   = list(string)
      env    = map(string)
      mounts = map(object({ path = string, mount_path = string }))
    })
    values        = map(string)
    writes_models = bool
  }))
}

variable "secrets" {
  description = "Names of the Secrets created out of band (never in Terraform's state)."
  type = object({
    region_keys = string
    api_keys    = string
    admin_keys  = string
    region_tls  = string
    region_ca   = string
  })
}

variable "registry_config_map" {
  type    = string
  default = ""
}

variable "model_cache_path" {
  description = "Node-local directory the model-cache DaemonSet fills and pods mount at $VOICEMESH_HOME/models."
  type        = string
}

variable "model_cache_type" {
  description = "hostPath type: DirectoryOrCreate for the DaemonSet that fills it, Directory for the pods that read it."
  type        = string
  default     = "Directory"
}
