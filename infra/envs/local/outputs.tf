output "regions" {
  description = "One registry record per region: id, url, location, residency, capacity."
  value       = [for id in sort(keys(local.regions)) : module.region[id].region]
}

output "llm_url" {
  description = "The LLM the regions use."
  value       = local.llm_url
}

output "processes" {
  description = "Every process Terraform started, keyed by the resource address that owns it (for -replace)."
  value = merge(
    { for id in keys(local.regions) :
      "module.region[\"${id}\"].module.process.null_resource.process" => module.region[id].process
    },
    { for llm in module.llm : "module.llm[0].module.process.null_resource.process" => llm.process },
    { for redis in module.redis : "module.redis[0].module.process.null_resource.process" => redis.process },
    { for id in keys(local.edges) :
      "module.edge[\"${id}\"].module.process.null_resource.process" => module.edge[id].process
    },
    { for fd in module.frontdoor : "module.frontdoor[0].module.process.null_resource.process" => fd.process },
  )
}

output "edges" {
  description = "One record per edge: id, url, location."
  value       = [for id in sort(keys(local.edges)) : module.edge[id].edge]
}

output "frontdoor" {
  description = "The front door (url: what clients use; stats_url: its /health and /stats), or null without edges."
  value       = length(module.frontdoor) > 0 ? module.frontdoor[0].frontdoor : null
}
