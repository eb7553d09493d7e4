variable "region_id" {
  description = "Region id as the router sees it (e.g. eu-west); also names every object."
  type        = string
}

variable "namespace" {
  type    = string
  default = "voicemesh"
}

variable "image" {
  description = "The voicemesh image (runs `voicemesh region serve`)."
  type        = string
}

variable "vllm_image" {
  description = "vLLM's OpenAI-compatible server image."
  type        = string
  default     = "vllm/vllm-openai:v0.8.5"
}

variable "llm_model" {
  description = "Model vLLM serves, as a path under the node's model cache (weights are never pulled at pod start)."
  type        = string
  default     = "/models/Qwen3-8B"
}

variable "llm_served_name" {
  type    = string
  default = "qwen3-8b"
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
  description = "Node-local directory that the model-cache DaemonSet fills and pods mount read-only."
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

variable "max_concurrent" {
  description = "Turns one pod serves at once (admission control)."
  type        = number
  default     = 8
}

variable "max_queue" {
  type    = number
  default = 16
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

variable "service_annotations" {
  description = "Annotations of the region's Service, e.g. an internal load balancer reachable from the edges."
  type        = map(string)
  default     = {}
}

variable "region_keys_secret" {
  description = "Existing Secret holding the region key set under the key region-keys.json (made by `voicemesh infra rotate-key --keys FILE`, uploaded with kubectl): never in Terraform state. Regions re-read it when the kubelet updates the mounted file."
  type        = string
}

variable "tls_secret" {
  description = "Existing kubernetes.io/tls Secret (tls.crt, tls.key): the region serves https/wss with it. Empty: plain HTTP inside the cluster network."
  type        = string
  default     = ""
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
  description = "Existing Secret in var.namespace holding the scraper's metrics credential under the key token (the raw secret from `voicemesh infra rotate-key --metrics --keys FILE`, written to FILE.metrics-token; regions know only its hash, from the key set). Read by the PodMonitor (pod_monitor = true)."
  type        = string
  default     = "voicemesh-region-metrics"
}

variable "pod_monitor" {
  description = "Create a prometheus-operator PodMonitor that scrapes the region pods with the metrics credential (instead of prometheus.io annotations, which a plain Prometheus reads: give it a job of its own with that credential, see main.tf)."
  type        = bool
  default     = false
}
