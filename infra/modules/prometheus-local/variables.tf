variable "targets" {
  description = "What to scrape, by tier (edge, region, llm): id and host:port of each."
  type        = map(list(object({ id = string, address = string })))
}

variable "rules_dir" {
  description = "The rule files' directory (modules/prometheus-rules' rules_dir): every *.yml in it is loaded."
  type        = string
}

variable "metrics_token_path" {
  description = "File with the metrics credential (0600) the edges and regions accept on GET /metrics."
  type        = string
}

variable "run_dir" {
  description = "Where the pid, log, configuration files and the data directory (prometheus-data) go."
  type        = string
}

variable "host" {
  type    = string
  default = "127.0.0.1"
}

variable "port" {
  description = "Prometheus's web UI and HTTP API."
  type        = number
}

variable "scrape_interval_s" {
  description = "Seconds between scrapes (and rule evaluations)."
  type        = number
  default     = 5
}

variable "prometheus_bin" {
  description = "The prometheus executable (Debian's prometheus package)."
  type        = string
  default     = "prometheus"
}

variable "ready_timeout_s" {
  type    = number
  default = 30
}
