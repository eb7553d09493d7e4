# An edge on this machine: `voicemesh edge serve` at its own pseudo-location, reading the registry
# file, with sessions and breaker state in the shared Redis. Maps to modules/edge in the cloud.
# The API and admin keys are passed as files: only their paths enter Terraform's state; a small
# bash wrapper puts them in the environment and then becomes the edge (exec).

locals {
  url = "http://${var.host}:${var.port}"
  command = [
    "bash", "-c", "VOICEMESH_API_KEYS=\"$(cat \"$1\")\" VOICEMESH_ADMIN_KEYS=\"$(cat \"$2\")\" exec \"$${@:3}\"",
    "edge-keys", var.api_key_path, var.admin_key_path,
    var.voicemesh_bin, "edge", "serve",
    "--port", tostring(var.port),
    "--host", var.host,
    "--registry", var.registry_path,
    "--region-keys", var.region_keys_path,
    "--location", "${var.location.lat},${var.location.lon}",
    "--store-url", var.redis_url,
    "--redis-url", var.redis_url,
  ]
}

module "process" {
  source          = "../local-process"
  name            = "edge-${var.id}"
  command         = local.command
  run_dir         = var.run_dir
  health_url      = "${local.url}/health"
  match           = "edge serve --port ${var.port}"
  ready_timeout_s = var.ready_timeout_s
  stop_grace_s    = var.stop_grace_s
}
