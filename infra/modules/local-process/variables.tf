variable "name" {
  description = "Unique name of the process; names its pid, log and ready files."
  type        = string
}

variable "command" {
  description = "The command line, one argument per element."
  type        = list(string)
}

variable "run_dir" {
  description = "Directory for the pid, log and ready files (outside the checkout)."
  type        = string
}

variable "health_url" {
  description = "URL that answers 2xx once the process is ready to serve (http), or the address it serves (other schemes: see ready_command)."
  type        = string
}

variable "ready_command" {
  description = "A command that succeeds once the process serves, for what does not speak HTTP (redis-cli ping); empty = GET health_url."
  type        = list(string)
  default     = []
}

variable "match" {
  description = "Text that must appear in the process's command line before it is signalled (guards against a reused pid)."
  type        = string
}

variable "ready_timeout_s" {
  description = "Seconds to wait for the health URL before giving up (and stopping the process)."
  type        = number
  default     = 180
}

variable "stop_grace_s" {
  description = "Seconds between SIGTERM and SIGKILL on destroy."
  type        = number
  default     = 15
}

variable "env" {
  description = "Environment variables the process gets on top of what Terraform passes on (never a secret: only paths)."
  type        = map(string)
  default     = {}
}
