variable "regions" {
  description = "Region id -> where it is and what envs/cloud-platform made for it (addresses, Redis, names)."
  type = map(object({
    location            = object({ lat = number, lon = number })
    residency           = list(string)
    region_ip           = string # the region Service's reserved internal address
    pod_cidr            = string # this cluster's pod range (other regions' NetworkPolicies allow it)
    redis_url           = string # this region's Redis: its edges use it, and only they
    edge_host           = string # the public name of this region's front door
    edge_ip_name        = string # its reserved global address
    managed_certificate = string # GKE ManagedCertificate for edge_host ("" = edge_tls_secret only)
  }))
}

variable "workloads" {
  description = "voicemesh.workloads in the container layout: `voicemesh infra render` writes it to workloads.auto.tfvars.json."
  type = map(object({
    argv   = list(string)
    env    = map(string)
    mounts = map(object({ path = string, mount_path = string }))
  }))
}

variable "image" {
  description = "The voicemesh image (uid 10001, entrypoint voicemesh, VOICEMESH_HOME=/var/lib/voicemesh)."
  type        = string
}

variable "model_source" {
  description = "The bucket mirror of the models (https or file URL) the model-fetch init containers read."
  type        = string
}

variable "namespace" {
  type    = string
  default = "voicemesh"
}

variable "secrets" {
  description = "Names of the Secrets created out of band in every cluster (docs/deploy.md)."
  type = object({
    region_keys = string
    api_keys    = string
    admin_keys  = string
    region_tls  = string
    region_ca   = string
  })
  default = {
    region_keys = "voicemesh-region-keys"
    api_keys    = "voicemesh-api-keys"
    admin_keys  = "voicemesh-admin-keys"
    region_tls  = "voicemesh-region-tls"
    region_ca   = "voicemesh-region-ca"
  }
}

variable "edge_tls_secret" {
  description = "kubernetes.io/tls Secret of the front door in every cluster; empty: managed certificates only."
  type        = string
  default     = ""
}

variable "region_capacity" {
  description = "The region workload's --max-concurrent (for the registry's capacity)."
  type        = number
}

variable "prometheus_url" {
  description = "Prometheus that KEDA queries (prometheus-operator's, installed by envs/cloud-platform)."
  type        = string
  default     = "http://prometheus-operated.monitoring.svc.cluster.local:9090"
}

variable "pod_monitor" {
  type    = bool
  default = true
}

variable "llm_image" {
  description = "vLLM's image of the profile's vLLM version: `voicemesh infra render` writes it beside the workloads."
  type        = string
}

variable "prometheus_rule_labels" {
  description = "Labels the PrometheusRule carries on top of app.kubernetes.io/part-of, for the Prometheus's ruleSelector (kube-prometheus-stack: { release = RELEASE })."
  type        = map(string)
  default     = {}
}
