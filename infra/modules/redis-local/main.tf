# One redis-server on this machine, shared by every local edge (sessions, client secrets, breaker
# state). In memory only: no snapshot, no append-only file; it is a cache the edges can lose.
# In the cloud: one managed Redis per region (envs/cloud-platform), each region's edges use theirs.

locals {
  url    = "redis://${var.host}:${var.port}/0"
  values = { "{port}" = tostring(var.port) }
}

module "process" {
  source  = "../local-process"
  name    = "redis"
  command = [for arg in var.workload.argv : lookup(local.values, arg, arg)]
  run_dir = var.run_dir
  # Not HTTP: the address is what `voicemesh infra status` pings, redis-cli is how start.sh waits.
  health_url    = local.url
  ready_command = ["redis-cli", "-h", var.host, "-p", tostring(var.port), "ping"]
  # redis-server rewrites its command line to "redis-server HOST:PORT".
  match           = "redis-server ${var.host}:${var.port}"
  ready_timeout_s = 30
}
