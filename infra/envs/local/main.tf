# Local environment: two (or three) regions on loopback, each its own process with its own port,
# pseudo-location and residency tag, and one shared vLLM (or an LLM you already run; or, with
# llm_per_region, a vLLM of each region's own on the ports after llm_port, as in the cloud); with
# edge_count > 0, that many edges in front of them (consecutive ports, each at its own
# pseudo-location) sharing one redis-server. Driven by `voicemesh up|down` and
# `voicemesh infra up|down|status --env local`; the registry is built from `regions`. Every command
# line comes from var.workloads (voicemesh.workloads, the same the Kubernetes modules run).

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
    region.id => merge(region, { port = var.base_port + index, llm_port = var.llm_port + index })
  }
  # Where users are: each edge ranks the regions nearest to it first (the router's distance prior).
  edge_catalogue = [
    { id = "paris", location = { lat = 48.86, lon = 2.35 } },
    { id = "new-york", location = { lat = 40.71, lon = -74.01 } },
    { id = "london", location = { lat = 51.51, lon = -0.13 } },
    { id = "chicago", location = { lat = 41.88, lon = -87.63 } },
  ]
  edges = {
    for index, edge in slice(local.edge_catalogue, 0, var.edge_count) :
    edge.id => merge(edge, { port = var.edge_port + index })
  }
  own_llm    = var.llm_url == ""
  region_llm = local.own_llm && var.llm_per_region
  llm_url    = local.region_llm ? "" : local.own_llm ? module.llm[0].url : var.llm_url
  # The LLM each region talks to: its own, or the shared one.
  llm_urls = { for id in keys(local.regions) : id => local.region_llm ? module.region_llm[id].url : local.llm_url }
}

module "llm" {
  source   = "../../modules/llm-local"
  count    = local.own_llm && !var.llm_per_region ? 1 : 0
  workload = var.workloads.llm
  run_dir  = var.run_dir
  port     = var.llm_port
}

# llm_per_region: each region's own vLLM (its death is that region's alone, as in the cloud).
module "region_llm" {
  source   = "../../modules/llm-local"
  for_each = local.region_llm ? local.regions : {}
  name     = "llm-${each.key}"
  workload = var.workloads.llm
  run_dir  = var.run_dir
  port     = each.value.llm_port
}

module "region" {
  source    = "../../modules/region-local"
  for_each  = local.regions
  id        = each.key
  workload  = var.workloads.region
  port      = each.value.port
  location  = each.value.location
  residency = each.value.residency
  run_dir   = var.run_dir
  llm_url   = local.llm_urls[each.key]
  capacity  = var.max_concurrent
}

# The registry the edges read, written as soon as the regions serve (the edges start in this same
# apply, before voicemesh writes the same records from the outputs). Atomic: write, then rename.
resource "null_resource" "registry" {
  count = var.edge_count > 0 ? 1 : 0
  triggers = {
    path    = var.registry_path
    content = jsonencode({ regions = [for id in sort(keys(local.regions)) : module.region[id].region], source = "terraform:local" })
  }
  provisioner "local-exec" {
    command = "mkdir -p \"$(dirname \"$FILE\")\" && printf '%s' \"$CONTENT\" >\"$FILE.part\" && mv \"$FILE.part\" \"$FILE\""
    environment = {
      FILE    = self.triggers.path
      CONTENT = self.triggers.content
    }
  }
}

module "redis" {
  source   = "../../modules/redis-local"
  count    = var.edge_count > 0 ? 1 : 0
  workload = var.workloads.redis
  run_dir  = var.run_dir
  port     = var.redis_port
}

module "edge" {
  source     = "../../modules/edge-local"
  for_each   = local.edges
  id         = each.key
  workload   = var.workloads.edge
  port       = each.value.port
  location   = each.value.location
  run_dir    = var.run_dir
  redis_url  = module.redis[0].url
  depends_on = [null_resource.registry]
}

# The front door: HAProxy on the address clients use, in front of every edge (health-checked; a
# connection to a dead edge goes to a live one at once), as the Service does in the cloud.
module "frontdoor" {
  source      = "../../modules/frontdoor-local"
  count       = var.edge_count > 0 && var.frontdoor_port > 0 ? 1 : 0
  edges       = [for id in sort(keys(local.edges)) : { id = id, host = "127.0.0.1", port = local.edges[id].port }]
  run_dir     = var.run_dir
  port        = var.frontdoor_port
  stats_port  = var.frontdoor_stats_port
  haproxy_bin = var.haproxy_bin
  depends_on  = [module.edge]
}

module "rules" {
  source = "../../modules/prometheus-rules"
}

# Prometheus: every edge, region and the vLLM, scraped with the metrics credential; the rules of
# modules/prometheus-rules evaluated (docs/observability.md).
module "prometheus" {
  source = "../../modules/prometheus-local"
  count  = var.prometheus_port > 0 ? 1 : 0
  targets = {
    edge   = [for id in sort(keys(local.edges)) : { id = id, address = "127.0.0.1:${local.edges[id].port}" }]
    region = [for id in sort(keys(local.regions)) : { id = id, address = "127.0.0.1:${local.regions[id].port}" }]
    llm = [for id, url in(local.region_llm ? local.llm_urls : { llm = local.llm_url }) :
    { id = id, address = regex("^https?://([^/]+)", url)[0] }]
  }
  rules_dir          = module.rules.rules_dir
  metrics_token_path = var.metrics_token_path
  run_dir            = var.run_dir
  port               = var.prometheus_port
  prometheus_bin     = var.prometheus_bin
  depends_on         = [module.edge, module.region]
}
