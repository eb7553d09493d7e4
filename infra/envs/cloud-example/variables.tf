variable "project" {
  description = "GCP project id."
  type        = string
}

variable "image" {
  description = "The voicemesh image, e.g. europe-docker.pkg.dev/PROJECT/voicemesh/voicemesh:0.1.0."
  type        = string
}

variable "gpu_type" {
  type    = string
  default = "nvidia-l4"
}

variable "api_keys_secret" {
  description = "Name of the Secret (created out of band, in each cluster) holding VOICEMESH_API_KEYS."
  type        = string
  default     = "voicemesh-api-keys"
}

variable "regions" {
  description = "Two GKE regions; each becomes a cluster with a CPU pool (edge) and a GPU pool (region)."
  type = map(object({
    gcp_region = string
    location   = object({ lat = number, lon = number })
    residency  = list(string)
  }))
  default = {
    eu-west = { gcp_region = "europe-west4", location = { lat = 52.37, lon = 4.90 }, residency = ["eu"] }
    us-east = { gcp_region = "us-east4", location = { lat = 39.04, lon = -77.49 }, residency = ["us"] }
  }
}

variable "region_keys_secret" {
  description = "Secret (same name in every cluster) with region-keys.json, created out of band from `voicemesh infra rotate-key --keys FILE`; edges sign region tokens with it, regions check them."
  type        = string
  default     = "voicemesh-region-keys"
}

variable "region_metrics_secret" {
  description = "Secret (in each cluster's voicemesh namespace) with the scraper's metrics credential under the key token, created out of band from `voicemesh infra rotate-key --metrics --keys FILE` (FILE.metrics-token); regions accept it on GET /metrics only."
  type        = string
  default     = "voicemesh-region-metrics"
}

variable "region_pod_monitor" {
  description = "Scrape regions with a prometheus-operator PodMonitor carrying the metrics credential; false: a Prometheus job of your own with it (modules/region-k8s/main.tf shows one)."
  type        = bool
  default     = false
}

variable "edge_cidrs" {
  description = "Pod ranges of the edges in the other clusters, allowed through each region's NetworkPolicy."
  type        = list(string)
  default     = []
}
