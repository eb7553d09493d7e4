output "pid_file" {
  value       = local.pid_file
  description = "File holding the pid of the process (also its process-group id)."
}

output "log_file" {
  value = local.log_file
}

output "resource_id" {
  value       = null_resource.process.id
  description = "Changes whenever the process was (re)started by Terraform."
}

output "process" {
  description = "What `voicemesh infra status|up` needs to check the process (address: see the env)."
  value = {
    name       = var.name
    pid_file   = local.pid_file
    log_file   = local.log_file
    health_url = var.health_url
    match      = var.match
  }
}
