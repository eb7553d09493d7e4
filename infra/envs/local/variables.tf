variable "workloads" {
  description = "Every process's command line, environment and mounts (voicemesh.workloads, local layout): region, edge, llm, redis."
  type = map(object({
    argv   = list(string)
    env    = map(string)
    mounts = map(object({ path = string, mount_path = string }))
  }))
}

variable "voicemesh_bin" {
  description = "Absolute path of the `voicemesh` executable (voicemesh puts it in `workloads`; recorded so a bare `infra up` repeats it)."
  type        = string
  default     = ""
}

variable "run_dir" {
  description = "Where pid, log and ready files go (the per-user state directory)."
  type        = string
}

variable "region_keys_path" {
  description = "The region key set (JSON, 0600) made by voicemesh before apply: regions check edge tokens against it. Only the path is in the state (in `workloads`)."
  type        = string
  default     = ""
}

variable "region_count" {
  description = "How many local regions: 2 (eu-west, us-east) or 3 (adds eu-north)."
  type        = number
  default     = 2
  validation {
    condition     = var.region_count >= 1 && var.region_count <= 3
    error_message = "The region_count must be 1, 2 or 3."
  }
}

variable "base_port" {
  description = "The first region listens here, the next on base_port + 1, and so on."
  type        = number
  default     = 9001
}

variable "llm_url" {
  description = "An OpenAI-compatible LLM the regions share; empty = start one vLLM for them."
  type        = string
  default     = ""
}

variable "llm_port" {
  description = "Port of the shared vLLM started when llm_url is empty (llm_per_region: the first region's; the next, llm_port + 1, ...)."
  type        = number
  default     = 8100
}

variable "llm_per_region" {
  description = "Start a vLLM for each region (as in the cloud: an LLM's death is one region's) instead of one they share. Each takes ~2.9 GB and they start together (docs/drills/llm-crash.md)."
  type        = bool
  default     = false
}

variable "profile" {
  description = "Model profile: cpu or gpu (voicemesh puts it in `workloads`)."
  type        = string
  default     = "cpu"
}

variable "max_concurrent" {
  description = "Turns a region serves at once (in `workloads`; also the capacity in the registry)."
  type        = number
  default     = 4
}

variable "max_queue" {
  description = "Turns that may wait for a slot (in `workloads`)."
  type        = number
  default     = 4
}

variable "edge_count" {
  description = "How many edges (0 = regions only): paris, new-york, london, chicago, in that order."
  type        = number
  default     = 0
  validation {
    condition     = var.edge_count >= 0 && var.edge_count <= 4
    error_message = "The edge_count must be between 0 and 4."
  }
}

variable "edge_port" {
  description = "The first edge listens here, the next on edge_port + 1, and so on (behind the front door)."
  type        = number
  default     = 8081
}

variable "redis_port" {
  description = "Port of the redis-server the edges share."
  type        = number
  default     = 6390
}

variable "registry_path" {
  description = "Region registry file the edges read (written by this apply when edge_count > 0)."
  type        = string
  default     = ""
}

variable "api_key_path" {
  description = "File (0600) with the API keys the edges accept (only the path enters the state)."
  type        = string
  default     = ""
}

variable "admin_key_path" {
  description = "File (0600) with the admin keys the edges accept."
  type        = string
  default     = ""
}

variable "frontdoor_port" {
  description = "Where clients connect: HAProxy in front of the edges (0 = no front door: clients use each edge's own URL)."
  type        = number
  default     = 8080
}

variable "frontdoor_stats_port" {
  description = "The front door's own /health and /stats (voicemesh up: the port after the last edge)."
  type        = number
  default     = 8085
}

variable "haproxy_bin" {
  description = "The haproxy executable (Debian's haproxy package)."
  type        = string
  default     = "haproxy"
}

variable "prometheus_port" {
  description = "Prometheus's port (0 = no Prometheus; `voicemesh up` picks a free one)."
  type        = number
  default     = 0
}

variable "prometheus_bin" {
  description = "The prometheus executable (Debian's prometheus package)."
  type        = string
  default     = "prometheus"
}

variable "metrics_token_path" {
  description = "File (0600) with the metrics credential Prometheus sends to the edges and regions (only the path enters the state)."
  type        = string
  default     = ""
}
