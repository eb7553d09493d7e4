variable "edges" {
  description = "The edges behind the front door: id (the server's name), host, port."
  type        = list(object({ id = string, host = string, port = number }))
}

variable "run_dir" {
  description = "Where the pid, log, ready and configuration files go."
  type        = string
}

variable "host" {
  type    = string
  default = "127.0.0.1"
}

variable "port" {
  description = "Where clients connect (the one URL of the deployment)."
  type        = number
}

variable "stats_port" {
  description = "The front door's own /health (200 while an edge is up) and /stats page."
  type        = number
}

variable "haproxy_bin" {
  description = "The haproxy executable (Debian's haproxy package)."
  type        = string
  default     = "haproxy"
}

variable "ready_timeout_s" {
  type    = number
  default = 30
}
