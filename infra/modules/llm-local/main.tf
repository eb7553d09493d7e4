# One vLLM on this machine (`voicemesh llm serve`, voicemesh.workloads' command line): shared by every
# local region, or one region's own (llm_per_region). In the cloud each region pod runs the same
# command in a container beside it.

locals {
  url    = "http://${var.host}:${var.port}/v1"
  values = { "{port}" = tostring(var.port) }
  argv   = [for arg in var.workload.argv : lookup(local.values, arg, arg)]
  env    = { for k, v in var.workload.env : k => lookup(local.values, v, v) }
}

module "process" {
  source          = "../local-process"
  name            = var.name
  command         = local.argv
  env             = local.env
  run_dir         = var.run_dir
  health_url      = "http://${var.host}:${var.port}/health"
  match           = "llm serve"
  ready_timeout_s = var.ready_timeout_s
  stop_grace_s    = 30
}
