output "url" {
  description = "OpenAI-compatible base URL (…/v1)."
  value       = local.url
  # Regions must not start before the server answers.
  depends_on = [module.process]
}

output "pid_file" {
  value = module.process.pid_file
}

output "process" {
  value = module.process.process
}

output "argv" {
  description = "The command line this process runs (placeholders filled)."
  value       = local.argv
}

output "env" {
  value = local.env
}
