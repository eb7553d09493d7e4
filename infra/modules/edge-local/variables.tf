variable "id" {
  description = "Edge id (names its pid and log files): its pseudo-location's name."
  type        = string
}

variable "workload" {
  description = "The edge's process from voicemesh.workloads: argv and env with placeholders ({port}, {location}, {redis_url})."
  type        = object({ argv = list(string), env = map(string) })
}

variable "run_dir" {
  type = string
}

variable "host" {
  description = "The address the workload binds (for the URL it is reached at)."
  type        = string
  default     = "127.0.0.1"
}

variable "port" {
  type = number
}

variable "location" {
  description = "Pseudo-location: the router's distance prior ranks the nearest regions first."
  type        = object({ lat = number, lon = number })
}

variable "redis_url" {
  description = "Shared Redis: sessions, client secrets and breaker state, so any edge serves any session."
  type        = string
}

variable "ready_timeout_s" {
  type    = number
  default = 120
}

variable "stop_grace_s" {
  description = "Seconds between SIGTERM and SIGKILL on destroy (the edge drains its sessions first)."
  type        = number
  default     = 30
}
