# Prometheus on this machine: it scrapes every edge, region and the vLLM of the local deployment and
# evaluates the rules of modules/prometheus-rules (the same the cloud's PrometheusRule carries).
# The configuration is rendered here from the targets (JSON, which Prometheus reads as YAML) and
# carried on the command line, so a change of the targets re-provisions it; a small bash wrapper
# writes it to the run directory and then becomes Prometheus (exec), as frontdoor-local does.
# Edges and regions are scraped with the metrics credential (a file: only its path is in the state);
# vLLM's /metrics has no authentication of its own (loopback only here).

locals {
  url         = "http://${var.host}:${var.port}"
  config_file = "${var.run_dir}/prometheus.yml"
  auth        = { type = "Bearer", credentials_file = var.metrics_token_path }
  job = {
    for tier, targets in var.targets : tier => merge(
      {
        job_name     = "voicemesh-${tier}"
        metrics_path = "/metrics"
        static_configs = [for t in targets : {
          targets = [t.address]
          labels  = { tier = tier, id = t.id }
        }]
      },
      tier == "llm" ? {} : { authorization = local.auth },
    )
  }
  config = jsonencode({
    global = {
      scrape_interval     = "${var.scrape_interval_s}s"
      evaluation_interval = "${var.scrape_interval_s}s"
    }
    rule_files     = ["${var.rules_dir}/*.yml"]
    scrape_configs = [for tier in sort(keys(local.job)) : local.job[tier] if length(var.targets[tier]) > 0]
  })
  command = [
    "bash", "-c", "printf '%s' \"$1\" >\"$2.part\" && mv \"$2.part\" \"$2\" && exec \"$3\" --config.file=\"$2\" --storage.tsdb.path=\"$4\" --storage.tsdb.retention.time=2d --web.listen-address=\"$5\"",
    "prometheus-config", local.config, local.config_file, var.prometheus_bin, "${var.run_dir}/prometheus-data",
    "${var.host}:${var.port}",
  ]
}

module "process" {
  source          = "../local-process"
  name            = "prometheus"
  command         = local.command
  run_dir         = var.run_dir
  health_url      = "${local.url}/-/ready"
  match           = "--config.file=${local.config_file}"
  ready_timeout_s = var.ready_timeout_s
  stop_grace_s    = 10
}
