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
