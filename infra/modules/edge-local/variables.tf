variable "id" {
  description = "Edge id (names its pid and log files): its pseudo-location's name."
  type        = string
}

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
  type = number
}

variable "location" {
  description = "Pseudo-location: the router's distance prior ranks the nearest regions first."
  type        = object({ lat = number, lon = number })
}

variable "registry_path" {
  description = "Region registry file the edge reads and watches."
  type        = string
}

variable "region_keys_path" {
  description = "Region key set (0600): the edge signs region tokens with it."
  type        = string
}

variable "api_key_path" {
  description = "File (0600) holding the API keys clients use (comma-separated)."
  type        = string
}

variable "admin_key_path" {
  description = "File (0600) holding the admin keys (/status, the ops page)."
  type        = string
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
