# One redis-server on this machine, shared by every local edge (sessions, client secrets, breaker
# state). In memory only: no snapshot, no append-only file; it is a cache the edges can lose.

locals {
  url = "redis://${var.host}:${var.port}/0"
}

module "process" {
  source  = "../local-process"
  name    = "redis"
  command = [var.redis_bin, "--bind", var.host, "--port", tostring(var.port), "--save", "", "--appendonly", "no"]
  run_dir = var.run_dir
  # Not HTTP: the address is what `voicemesh infra status` pings, redis-cli is how start.sh waits.
  health_url    = local.url
  ready_command = ["redis-cli", "-h", var.host, "-p", tostring(var.port), "ping"]
  # redis-server rewrites its command line to "redis-server HOST:PORT".
  match           = "redis-server ${var.host}:${var.port}"
  ready_timeout_s = 30
}
