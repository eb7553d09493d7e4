output "objects" {
  description = "Every object of this edge, in apply order (BackendConfig's CRD is GKE's own; the PodMonitor's comes from envs/cloud-platform)."
  value = concat([
    local.config_map, module.cache.daemon_set, local.deployment, local.service, local.backend_config,
    local.ingress, local.autoscaler, local.disruption_budget,
  ], slice([local.pod_monitor], 0, var.pod_monitor ? 1 : 0))
}

output "registry" {
  description = "The registry the edge reads (same format as the local registry.json)."
  value       = local.config_map.data["registry.json"]
}
