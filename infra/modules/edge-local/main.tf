# An edge on this machine: `voicemesh edge serve` at its own pseudo-location, reading the registry
# file, with sessions and breaker state in the shared Redis. Maps to modules/edge-k8s in the cloud,
# whose container runs the same command line (voicemesh.workloads'). The API and admin keys are
# files the edge reads (--api-keys-file, --admin-keys-file): only their paths enter the state.

locals {
  url = "http://${var.host}:${var.port}"
  values = {
    "{port}"      = tostring(var.port)
    "{location}"  = "${var.location.lat},${var.location.lon}"
    "{redis_url}" = var.redis_url
  }
  argv = [for arg in var.workload.argv : lookup(local.values, arg, arg)]
  env  = { for k, v in var.workload.env : k => lookup(local.values, v, v) }
}

module "process" {
  source          = "../local-process"
  name            = "edge-${var.id}"
  command         = local.argv
  env             = local.env
  run_dir         = var.run_dir
  health_url      = "${local.url}/health"
  match           = "edge serve --host ${var.host} --port ${var.port}"
  ready_timeout_s = var.ready_timeout_s
  stop_grace_s    = var.stop_grace_s
}
