variable "region_id" {
  description = "Region id as the router sees it (e.g. eu-west); also names every object."
  type        = string
}

variable "namespace" {
  type    = string
  default = "voicemesh"
}

variable "image" {
  description = "The voicemesh image: `voicemesh region serve` and `voicemesh models fetch`."
  type        = string
}

variable "llm_image" {
  description = "vLLM's image of the profile's vLLM version (voicemesh.models.catalog.VLLM_IMAGES; `voicemesh infra render` writes it): it runs the profile's vLLM command line."
  type        = string
}

variable "workloads" {
  description = "voicemesh.workloads in the container layout (`voicemesh infra render`): region, llm, model_fetch."
  type = object({
    region      = object({ argv = list(string), env = map(string), mounts = map(object({ path = string, mount_path = string })) })
    llm         = object({ argv = list(string), env = map(string), mounts = map(object({ path = string, mount_path = string })) })
    model_fetch = object({ argv = list(string), env = map(string), mounts = map(object({ path = string, mount_path = string })) })
  })
}

variable "model_source" {
  description = "URL (https or file) of the bucket mirror holding the profile's model directories and their sha256 manifest (VOICEMESH_MODEL_SOURCE of the model-fetch init container)."
  type        = string
}

variable "secrets" {
  description = "Names of the Secrets created out of band (docs/deploy.md): region_keys (region-keys.json), api_keys and admin_keys (keys), region_tls (tls.crt, tls.key, ca.crt; used when the workload serves TLS), region_ca (ca.crt)."
  type = object({
    region_keys = string
    api_keys    = string
    admin_keys  = string
    region_tls  = string
    region_ca   = string
  })
}

variable "gpu_node_selector" {
  description = "Labels of the GPU node pool."
  type        = map(string)
  default     = { "cloud.google.com/gke-accelerator" = "nvidia-l4" }
}

variable "gpu_taint_key" {
  description = "Taint on the GPU pool that only GPU workloads tolerate."
  type        = string
  default     = "nvidia.com/gpu"
}

variable "model_cache_path" {
  description = "Node-local directory that the model-cache DaemonSet fills and pods mount read-only at $VOICEMESH_HOME/models."
  type        = string
  default     = "/var/lib/voicemesh/models"
}

variable "min_replicas" {
  type    = number
  default = 1
}

variable "max_replicas" {
  type    = number
  default = 4
}

variable "capacity" {
  description = "Turns one pod serves at once (the workload's --max-concurrent): the registry's capacity per replica."
  type        = number
  default     = 8
}

variable "prometheus_url" {
  description = "Prometheus that scrapes the region pods (KEDA queries it)."
  type        = string
}

variable "queue_depth_per_replica" {
  description = "KEDA target: queued turns per replica before another replica is added."
  type        = number
  default     = 2
}

variable "location" {
  type = object({ lat = number, lon = number })
}

variable "residency" {
  type    = list(string)
  default = []
}

variable "internal_ip" {
  description = "Reserved internal address of the region's internal load balancer (envs/cloud-platform); empty: a ClusterIP Service reached by cluster DNS."
  type        = string
  default     = ""
}

variable "service_annotations" {
  description = "Annotations of the region's Service, e.g. GKE's internal load balancer with global access."
  type        = map(string)
  default     = {}
}

variable "edge_pod_labels" {
  description = "Labels of the edge pods that may reach region pods (the NetworkPolicy's pod selector, any namespace)."
  type        = map(string)
  default     = { "app.kubernetes.io/name" = "voicemesh-edge" }
}

variable "edge_cidrs" {
  description = "Address ranges of edges in other clusters that reach this region through its internal load balancer."
  type        = list(string)
  default     = []
}

variable "metrics_namespace_labels" {
  description = "Labels of the namespace whose pods scrape /metrics (the Prometheus that KEDA queries)."
  type        = map(string)
  default     = { "kubernetes.io/metadata.name" = "monitoring" }
}

variable "metrics_token_secret" {
  description = "Existing Secret in var.namespace holding the scraper's metrics credential under the key token (`voicemesh infra rotate-key --metrics --keys FILE` writes it to FILE.metrics-token). Read by the PodMonitor."
  type        = string
  default     = "voicemesh-region-metrics"
}

variable "pod_monitor" {
  description = "Create a prometheus-operator PodMonitor that scrapes the region pods with the metrics credential (instead of prometheus.io annotations, which a plain Prometheus reads: give it a job of its own with that credential, see main.tf)."
  type        = bool
  default     = true
}
