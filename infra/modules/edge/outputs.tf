output "service_name" {
  value = kubernetes_service_v1.edge.metadata[0].name
}

output "registry" {
  description = "The registry the edge reads (same format as the local registry.json)."
  value       = kubernetes_config_map_v1.registry.data["registry.json"]
}
