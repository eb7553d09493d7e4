output "frontdoor" {
  description = "url (what clients use), stats_url (/health, /stats) and the edges behind it."
  value = {
    url       = local.url
    stats_url = local.stats_url
    edges     = [for e in var.edges : e.id]
  }
}

output "process" {
  value = module.process.process
}
