output "edge" {
  description = "id, url (http) and location of the edge."
  value = {
    id       = var.id
    url      = local.url
    location = var.location
  }
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
