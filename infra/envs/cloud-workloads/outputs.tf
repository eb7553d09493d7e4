output "regions" {
  description = "Registry records, same shape as the local environment's `regions` output."
  value       = module.objects.regions
}
