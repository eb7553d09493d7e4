# Local environment: two (or three) regions on loopback, each its own process with its own port,
# pseudo-location and residency tag, and one shared vLLM (or an LLM you already run).
# Driven by `voicemesh infra up|down|status --env local`; the registry is built from `regions`.

terraform {
  required_version = ">= 1.0"
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = "~> 2.1"
    }
  }
}

locals {
  # Pseudo-locations stand in for cloud regions; the router's residency and distance logic
  # sees the same shapes it will see in the cloud.
  catalogue = [
    { id = "eu-west", location = { lat = 50.11, lon = 8.68 }, residency = ["eu"] },   # Frankfurt
    { id = "us-east", location = { lat = 39.04, lon = -77.49 }, residency = ["us"] }, # Ashburn
    { id = "eu-north", location = { lat = 59.33, lon = 18.07 }, residency = ["eu"] }, # Stockholm
  ]
  regions = {
    for index, region in slice(local.catalogue, 0, var.region_count) :
    region.id => merge(region, { port = var.base_port + index })
  }
  own_llm = var.llm_url == ""
  llm_url = local.own_llm ? module.llm[0].url : var.llm_url
}

module "llm" {
  source        = "../../modules/llm-local"
  count         = local.own_llm ? 1 : 0
  voicemesh_bin = var.voicemesh_bin
  run_dir       = var.run_dir
  port          = var.llm_port
  profile       = var.profile
}

module "region" {
  source         = "../../modules/region-local"
  for_each       = local.regions
  id             = each.key
  port           = each.value.port
  location       = each.value.location
  residency      = each.value.residency
  voicemesh_bin  = var.voicemesh_bin
  run_dir        = var.run_dir
  keys_path      = var.region_keys_path
  llm_url        = local.llm_url
  profile        = var.profile
  max_concurrent = var.max_concurrent
  max_queue      = var.max_queue
}
