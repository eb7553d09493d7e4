variable "project" {
  description = "GCP project id."
  type        = string
}

variable "gpu_type" {
  type    = string
  default = "nvidia-l4"
}

variable "regions" {
  description = "One GKE cluster per region: a CPU pool (edge), a GPU pool (region), a Redis, addresses; where its users are (location) and whose data it may hold (residency); the public name of its front door."
  type = map(object({
    gcp_region = string
    location   = object({ lat = number, lon = number })
    residency  = list(string)
    edge_host  = string
  }))
  default = {
    eu-west = { gcp_region = "europe-west4", location = { lat = 52.37, lon = 4.90 }, residency = ["eu"], edge_host = "eu.voice.example.com" }
    us-east = { gcp_region = "us-east4", location = { lat = 39.04, lon = -77.49 }, residency = ["us"], edge_host = "us.voice.example.com" }
  }
}

variable "redis_memory_gb" {
  description = "Memorystore size per region (sessions, client secrets, breaker state: small)."
  type        = number
  default     = 1
}
