variable "id" {
  description = "Region id (what the router and the registry call it)."
  type        = string
}

variable "voicemesh_bin" {
  description = "The `voicemesh` executable to run (the one the user installed)."
  type        = string
}

variable "run_dir" {
  description = "Directory for pid, log and ready files."
  type        = string
}

variable "keys_path" {
  description = "Region key set file (made by voicemesh, mode 0600): every endpoint but a bare /health needs an edge token signed with one of its keys."
  type        = string
}

variable "host" {
  type    = string
  default = "127.0.0.1"
}

variable "port" {
  type = number
}

variable "llm_url" {
  description = "OpenAI-compatible LLM to attach to; empty = the region starts its own vLLM."
  type        = string
  default     = ""
}

variable "profile" {
  description = "Model profile: cpu or gpu."
  type        = string
  default     = "cpu"
}

variable "max_concurrent" {
  description = "Turns served at once (also the capacity published in the registry)."
  type        = number
  default     = 4
}

variable "max_queue" {
  description = "Turns that may wait for a slot before the region answers busy."
  type        = number
  default     = 4
}

variable "location" {
  description = "Pseudo-location used by the router's distance prior."
  type        = object({ lat = number, lon = number })
}

variable "residency" {
  description = "Data-residency tags, e.g. [\"eu\"]."
  type        = list(string)
  default     = []
}

variable "ready_timeout_s" {
  description = "Seconds to wait for /health (models load and warm in 10-20 s on CPU; its own vLLM adds ~60 s)."
  type        = number
  default     = 180
}
