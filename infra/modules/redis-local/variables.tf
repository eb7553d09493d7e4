variable "workload" {
  description = "redis-server's process from voicemesh.workloads: argv with the placeholder {port}."
  type        = object({ argv = list(string), env = map(string) })
}

variable "run_dir" {
  description = "Directory for pid, log and ready files."
  type        = string
}

variable "host" {
  type    = string
  default = "127.0.0.1"
}

variable "port" {
  type    = number
  default = 6390
}
