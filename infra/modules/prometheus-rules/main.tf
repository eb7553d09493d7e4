# The Prometheus rules of every deployment, in one place: rules/*.yml (recording: latency quantiles;
# alerts: what breaks a voice service; docs/observability.md). The local Prometheus
# (prometheus-local) reads the files; the cloud gets the same groups as a PrometheusRule
# (region-k8s). `promtool check rules` and `promtool test rules` (tests/rules_test.yml) check them:
# tests/infra/test_prometheus_rules.py.

locals {
  files  = sort(fileset("${path.module}/rules", "*.yml"))
  groups = flatten([for f in local.files : yamldecode(file("${path.module}/rules/${f}")).groups])
}
