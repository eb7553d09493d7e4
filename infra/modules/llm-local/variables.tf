variable "name" {
  description = "Names its pid, log and ready files: llm (shared) or llm-<region> (a region's own)."
  type        = string
  default     = "llm"
}

variable "workload" {
  description = "The LLM's process from voicemesh.workloads: argv and env with the placeholder {port}."
  type        = object({ argv = list(string), env = map(string) })
}

variable "run_dir" {
  type = string
}

variable "host" {
  description = "The address the workload binds (loopback)."
  type        = string
  default     = "127.0.0.1"
}

variable "port" {
  type    = number
  default = 8100
}

variable "ready_timeout_s" {
  description = "vLLM on CPU is ready after 40-60 s; give it room on a busy machine."
  type        = number
  default     = 420
}
