output "groups" {
  description = "Every rule group of rules/*.yml, as data (a PrometheusRule's spec.groups)."
  value       = local.groups
}

output "rules_dir" {
  description = "The directory of the rule files, absolute (a local Prometheus's rule_files)."
  value       = abspath("${path.module}/rules")
}
