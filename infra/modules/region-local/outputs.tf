output "region" {
  description = "The region's registry record (id, url, location, residency, capacity)."
  value = {
    id        = var.id
    url       = local.url
    location  = var.location
    residency = var.residency
    capacity  = var.max_concurrent
  }
}

output "process" {
  value = module.process.process
}
