output "region" {
  description = "The region's registry record (same shape as region-local's)."
  value = {
    id = var.region_id
    # Behind an (internal) load balancer, edges in other clusters reach it by its address.
    url = (length(var.service_annotations) > 0
      ? "${local.url_scheme}://${kubernetes_service_v1.region.status[0].load_balancer[0].ingress[0].ip}:9001"
    : "${local.url_scheme}://${kubernetes_service_v1.region.metadata[0].name}.${var.namespace}.svc.cluster.local:9001")
    location  = var.location
    residency = var.residency
    capacity  = var.max_concurrent * var.min_replicas
  }
}

output "service_name" {
  value = kubernetes_service_v1.region.metadata[0].name
}
