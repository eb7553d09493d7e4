variable "voicemesh_bin" {
  description = "The `voicemesh` executable to run."
  type        = string
}

variable "run_dir" {
  type = string
}

variable "host" {
  type    = string
  default = "127.0.0.1"
}

variable "port" {
  type    = number
  default = 8100
}

variable "profile" {
  type    = string
  default = "cpu"
}

variable "ready_timeout_s" {
  description = "vLLM on CPU is ready after 40-60 s; give it room on a busy machine."
  type        = number
  default     = 420
}
