# The front door on this machine: one HAProxy in front of the local edges, on the address clients
# use (health-checked, WebSocket-aware; haproxy.cfg.tftpl says why each setting). Maps to the
# GKE Ingress in front of modules/edge-k8s in the cloud. The configuration is rendered
# here from the edges and carried on the command line, so a change of the edges re-provisions it;
# a small bash wrapper writes it to the run directory and then becomes HAProxy (exec).

locals {
  url         = "http://${var.host}:${var.port}"
  stats_url   = "http://${var.host}:${var.stats_port}"
  config_file = "${var.run_dir}/frontdoor.cfg"
  config = templatefile("${path.module}/haproxy.cfg.tftpl", {
    host       = var.host
    port       = var.port
    stats_port = var.stats_port
    servers    = join("\n", [for e in var.edges : "    server ${e.id} ${e.host}:${e.port} check"])
  })
  command = [
    "bash", "-c", "printf '%s' \"$1\" >\"$2.part\" && mv \"$2.part\" \"$2\" && exec \"$3\" -db -f \"$2\"",
    "frontdoor-config", local.config, local.config_file, var.haproxy_bin,
  ]
}

module "process" {
  source          = "../local-process"
  name            = "frontdoor"
  command         = local.command
  run_dir         = var.run_dir
  health_url      = "${local.stats_url}/health"
  match           = "-f ${local.config_file}"
  ready_timeout_s = var.ready_timeout_s
  stop_grace_s    = 5
}
