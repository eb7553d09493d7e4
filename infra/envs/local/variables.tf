variable "voicemesh_bin" {
  description = "Absolute path of the `voicemesh` executable (the installed virtual environment's)."
  type        = string
}

variable "run_dir" {
  description = "Where pid, log and ready files go (the per-user state directory)."
  type        = string
}

variable "region_keys_path" {
  description = "The region key set (JSON, 0600) made by voicemesh before apply: regions check edge tokens against it. Only the path is in the state."
  type        = string
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
  description = "Port of the shared vLLM started when llm_url is empty."
  type        = number
  default     = 8100
}

variable "profile" {
  description = "Model profile: cpu or gpu."
  type        = string
  default     = "cpu"
}

variable "max_concurrent" {
  type    = number
  default = 2
}

variable "max_queue" {
  type    = number
  default = 4
}
