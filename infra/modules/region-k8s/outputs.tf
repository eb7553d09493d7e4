output "objects" {
  description = "Every object of this region, in apply order (the CRD-based ones last: their CRDs come from envs/cloud-platform)."
  value = concat(
    [module.cache.daemon_set, local.deployment, local.service, local.network_policy, local.disruption_budget, local.scaled_object],
    slice([local.pod_monitor], 0, var.pod_monitor ? 1 : 0),
  )
}

output "region" {
  description = "The region's registry record (same shape as region-local's)."
  value = {
    id = var.region_id
    # Behind an internal load balancer (a reserved address), edges in other clusters reach it there.
    url       = "${local.url_scheme}://${var.internal_ip == "" ? local.service_host : var.internal_ip}:${local.port}"
    location  = var.location
    residency = var.residency
    capacity  = var.capacity * var.min_replicas
  }
}
