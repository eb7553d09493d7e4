# One vLLM on this machine, shared by every local region (`voicemesh llm serve`).
# In the cloud each region pod runs its own vLLM beside it instead (see region-k8s).

locals {
  url = "http://${var.host}:${var.port}/v1"
}

module "process" {
  source          = "../local-process"
  name            = "llm"
  command         = [var.voicemesh_bin, "llm", "serve", "--host", var.host, "--port", tostring(var.port), "--profile", var.profile]
  run_dir         = var.run_dir
  health_url      = "http://${var.host}:${var.port}/health"
  match           = "llm serve"
  ready_timeout_s = var.ready_timeout_s
  stop_grace_s    = 30
}
