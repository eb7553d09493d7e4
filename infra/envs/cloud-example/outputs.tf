output "regions" {
  description = "Registry records, same shape as the local environment's `regions` output."
  value       = [module.region_eu_west.region, module.region_us_east.region]
}

output "edges" {
  value = {
    eu-west = module.edge_eu_west.service_name
    us-east = module.edge_us_east.service_name
  }
}
