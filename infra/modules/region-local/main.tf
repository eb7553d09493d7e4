# A region node on this machine: `voicemesh region serve`, started and stopped by Terraform.
# Maps to region-k8s in the cloud (one Deployment per region, vLLM beside it). The command line is
# not built here: it is voicemesh.workloads' (the same one the region-k8s container runs), with
# this instance's values in its placeholders. The key set is passed by path: the secret itself
# never enters Terraform's state.

locals {
  url    = "http://${var.host}:${var.port}"
  values = { "{id}" = var.id, "{port}" = tostring(var.port), "{llm_url}" = var.llm_url }
  argv   = [for arg in var.workload.argv : lookup(local.values, arg, arg)]
  env    = { for k, v in var.workload.env : k => lookup(local.values, v, v) }
}

module "process" {
  source          = "../local-process"
  name            = "region-${var.id}"
  command         = local.argv
  env             = local.env
  run_dir         = var.run_dir
  health_url      = "${local.url}/health"
  match           = "--id ${var.id}"
  ready_timeout_s = var.ready_timeout_s
}
