output "clusters" {
  description = "Region id -> what envs/cloud-workloads needs to reach its cluster."
  value = {
    for id, c in google_container_cluster.region : id => {
      endpoint               = c.endpoint
      cluster_ca_certificate = c.master_auth[0].cluster_ca_certificate
    }
  }
}

output "regions" {
  description = "Region id -> modules/cloud-objects' `regions` entry (addresses, this region's Redis, front door)."
  value = {
    for id, r in var.regions : id => {
      location            = r.location
      residency           = r.residency
      region_ip           = google_compute_address.region[id].address
      pod_cidr            = google_container_cluster.region[id].cluster_ipv4_cidr
      redis_url           = "redis://${google_redis_instance.edge[id].host}:${google_redis_instance.edge[id].port}/0"
      edge_host           = r.edge_host
      edge_ip_name        = google_compute_global_address.edge[id].name
      managed_certificate = "voicemesh-edge-${id}"
    }
  }
}

output "edge_addresses" {
  description = "Region id -> the front door's public address: point edge_host's DNS record (A) at it."
  value       = { for id, a in google_compute_global_address.edge : id => a.address }
}
