output "prometheus" {
  description = "url (the web UI and HTTP API), config_file, and the targets it scrapes by tier."
  value = {
    url         = local.url
    config_file = local.config_file
    targets     = { for tier, targets in var.targets : tier => [for t in targets : t.address] }
  }
}

output "process" {
  value = module.process.process
}
