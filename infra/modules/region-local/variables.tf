variable "id" {
  description = "Region id (what the router and the registry call it)."
  type        = string
}

variable "workload" {
  description = "The region's process from voicemesh.workloads: argv and env with placeholders ({id}, {port}, {llm_url})."
  type        = object({ argv = list(string), env = map(string) })
}

variable "run_dir" {
  description = "Directory for pid, log and ready files."
  type        = string
}

variable "host" {
  description = "The address the workload binds (for the health URL and the registry record)."
  type        = string
  default     = "127.0.0.1"
}

variable "port" {
  type = number
}

variable "llm_url" {
  description = "OpenAI-compatible LLM the region attaches to."
  type        = string
}

variable "capacity" {
  description = "Turns served at once (the workload's --max-concurrent), published in the registry."
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
  description = "Seconds to wait for /health (models load and warm in 10-20 s on CPU)."
  type        = number
  default     = 180
}
