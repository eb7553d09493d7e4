output "region" {
  description = "The region's registry record (id, url, location, residency, capacity)."
  value = {
    id        = var.id
    url       = local.url
    location  = var.location
    residency = var.residency
    capacity  = var.capacity
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
