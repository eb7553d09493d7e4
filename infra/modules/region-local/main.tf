# A region node on this machine: `voicemesh region serve`, started and stopped by Terraform.
# Maps to region-k8s in the cloud (one Deployment per region, vLLM beside it).
# The key set is passed by path: the secret itself never enters Terraform's state.

locals {
  url = "http://${var.host}:${var.port}"
  command = concat(
    [var.voicemesh_bin, "region", "serve",
      "--id", var.id,
      "--host", var.host,
      "--port", tostring(var.port),
      "--profile", var.profile,
      "--max-concurrent", tostring(var.max_concurrent),
      "--max-queue", tostring(var.max_queue),
      "--keys", var.keys_path,
    ],
    var.llm_url == "" ? [] : ["--llm-url", var.llm_url],
  )
}

module "process" {
  source          = "../local-process"
  name            = "region-${var.id}"
  command         = local.command
  run_dir         = var.run_dir
  health_url      = "${local.url}/health"
  match           = "--id ${var.id}"
  ready_timeout_s = var.ready_timeout_s
}
