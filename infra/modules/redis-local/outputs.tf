output "url" {
  description = "redis://HOST:PORT/0, for the edges' session store and breaker state."
  value       = local.url
  # Edges must not start before it answers.
  depends_on = [module.process]
}

output "process" {
  value = module.process.process
}
