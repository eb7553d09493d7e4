output "daemon_set" {
  description = "The DaemonSet object."
  value       = local.daemon_set
}
