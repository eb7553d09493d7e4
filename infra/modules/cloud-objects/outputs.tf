output "objects" {
  description = "Region id -> every object of its cluster, in apply order: the Namespace, the region's, the edge's."
  value = {
    for id in keys(var.regions) : id => concat([local.namespace[id]], module.region[id].objects, module.edge[id].objects)
  }
}

output "regions" {
  description = "Registry records, same shape as the local environment's `regions` output."
  value       = [for id in sort(keys(var.regions)) : module.region[id].region]
}
