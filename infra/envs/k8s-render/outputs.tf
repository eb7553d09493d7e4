output "objects" {
  description = "Region id -> every object of its cluster, in apply order."
  value       = module.objects.objects
}

output "regions" {
  value = module.objects.regions
}
