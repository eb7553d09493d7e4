output "objects" {
  description = "Region id -> every object of its cluster, in apply order: the Namespace, the region's, the edge's, the PrometheusRule."
  value = {
    for id in keys(var.regions) : id => concat(
      [local.namespace[id]], module.region[id].objects, module.edge[id].objects,
      slice([local.prometheus_rule], 0, var.pod_monitor ? 1 : 0),
    )
  }
}

output "regions" {
  description = "Registry records, same shape as the local environment's `regions` output."
  value       = [for id in sort(keys(var.regions)) : module.region[id].region]
}
