output "containers" {
  description = "Container name -> container object (command, env, volumeMounts from the workload)."
  value       = local.containers
}

output "volumes" {
  description = "The volumes the containers' mounts name."
  value       = local.volumes
}

output "pod_security" {
  value = local.pod_security
}
