variable "run_dir" {
  description = "Directory for pid, log and ready files."
  type        = string
}

variable "redis_bin" {
  description = "The redis-server executable (`make setup` installs it with apt)."
  type        = string
  default     = "redis-server"
}

variable "host" {
  type    = string
  default = "127.0.0.1"
}

variable "port" {
  type    = number
  default = 6390
}
