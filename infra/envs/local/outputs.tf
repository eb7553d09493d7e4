output "regions" {
  description = "One registry record per region: id, url, location, residency, capacity."
  value       = [for id in sort(keys(local.regions)) : module.region[id].region]
}

output "llm_url" {
  description = "The LLM the regions use (llm_per_region: each region's, in region order, space-separated)."
  value       = local.region_llm ? join(" ", [for id in sort(keys(local.llm_urls)) : local.llm_urls[id]]) : local.llm_url
}

output "processes" {
  description = "Every process Terraform started, keyed by the resource address that owns it (for -replace)."
  value = merge(
    { for id in keys(local.regions) :
      "module.region[\"${id}\"].module.process.null_resource.process" => module.region[id].process
    },
    { for llm in module.llm : "module.llm[0].module.process.null_resource.process" => llm.process },
    { for id, llm in module.region_llm :
      "module.region_llm[\"${id}\"].module.process.null_resource.process" => llm.process
    },
    { for redis in module.redis : "module.redis[0].module.process.null_resource.process" => redis.process },
    { for id in keys(local.edges) :
      "module.edge[\"${id}\"].module.process.null_resource.process" => module.edge[id].process
    },
    { for fd in module.frontdoor : "module.frontdoor[0].module.process.null_resource.process" => fd.process },
    { for p in module.prometheus : "module.prometheus[0].module.process.null_resource.process" => p.process },
  )
}

output "edges" {
  description = "One record per edge: id, url, location."
  value       = [for id in sort(keys(local.edges)) : module.edge[id].edge]
}

output "commands" {
  description = "What each kind of process runs here, one instance each (the first id in sort order; argv, env, mounts): tests/infra/test_no_drift.py compares it with the Kubernetes containers."
  value = merge(
    { for id in slice(sort(keys(local.regions)), 0, 1) : "region" => {
      id = id, argv = module.region[id].argv, env = module.region[id].env, mounts = keys(var.workloads.region.mounts) }
    },
    { for id in slice(sort(keys(local.edges)), 0, min(1, length(local.edges))) : "edge" => {
      id = id, argv = module.edge[id].argv, env = module.edge[id].env, mounts = keys(var.workloads.edge.mounts) }
    },
    { for llm in module.llm : "llm" => { id = "llm", argv = llm.argv, env = llm.env, mounts = keys(var.workloads.llm.mounts) } },
    { for id in slice(sort(keys(module.region_llm)), 0, min(1, length(module.region_llm))) : "llm" => {
      id = id, argv = module.region_llm[id].argv, env = module.region_llm[id].env, mounts = keys(var.workloads.llm.mounts) }
    },
  )
}

output "frontdoor" {
  description = "The front door (url: what clients use; stats_url: its /health and /stats), or null without edges."
  value       = length(module.frontdoor) > 0 ? module.frontdoor[0].frontdoor : null
}

output "prometheus" {
  description = "Prometheus (url: its UI and HTTP API; the targets it scrapes), or null without it."
  value       = length(module.prometheus) > 0 ? module.prometheus[0].prometheus : null
}
