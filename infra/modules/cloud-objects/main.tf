# Every Kubernetes object of the cloud deployment, by region (one cluster per region), as plain
# data: envs/k8s-render outputs it offline (and tests validate it), envs/cloud-workloads applies it.
# Each region's cluster runs that region (GPU pool) and an edge (CPU pool) whose registry lists
# every region: the edges fail over across regions as they do between the local processes.

locals {
  namespace = {
    for id in keys(var.regions) : id => {
      apiVersion = "v1"
      kind       = "Namespace"
      metadata   = { name = var.namespace, labels = { "app.kubernetes.io/part-of" = "voicemesh" } }
    }
  }
  secrets = {
    region_keys = var.secrets.region_keys
    api_keys    = var.secrets.api_keys
    admin_keys  = var.secrets.admin_keys
    region_tls  = var.secrets.region_tls
    region_ca   = var.secrets.region_ca
  }
}

module "rules" {
  source = "../prometheus-rules"
}

locals {
  # The rules every local Prometheus loads (modules/prometheus-rules), for the cluster's
  # prometheus-operator; its ruleSelector must match these labels (kube-prometheus-stack's default
  # selects its release label: set `prometheus_rule_labels` to it).
  prometheus_rule = {
    apiVersion = "monitoring.coreos.com/v1"
    kind       = "PrometheusRule"
    metadata   = { name = "voicemesh", namespace = var.namespace, labels = merge({ "app.kubernetes.io/part-of" = "voicemesh" }, var.prometheus_rule_labels) }
    spec       = { groups = module.rules.groups }
  }
}

module "region" {
  source         = "../region-k8s"
  for_each       = var.regions
  region_id      = each.key
  namespace      = var.namespace
  image          = var.image
  llm_image      = var.llm_image
  workloads      = { region = var.workloads.region, llm = var.workloads.llm, model_fetch = var.workloads.model_fetch }
  model_source   = var.model_source
  secrets        = local.secrets
  location       = each.value.location
  residency      = each.value.residency
  internal_ip    = each.value.region_ip
  capacity       = var.region_capacity
  prometheus_url = var.prometheus_url
  service_annotations = {
    "networking.gke.io/load-balancer-type"                         = "Internal"
    "networking.gke.io/internal-load-balancer-allow-global-access" = "true"
  }
  edge_cidrs  = [for other, r in var.regions : r.pod_cidr if other != each.key]
  pod_monitor = var.pod_monitor
}

module "edge" {
  source   = "../edge-k8s"
  for_each = var.regions
  name     = "edge"
  # Its own region first; the router still ranks by distance and health.
  namespace           = var.namespace
  image               = var.image
  workloads           = { edge = var.workloads.edge, edge_model_fetch = var.workloads.edge_model_fetch }
  location            = each.value.location
  regions             = concat([module.region[each.key].region], [for id, m in module.region : m.region if id != each.key])
  redis_url           = each.value.redis_url
  secrets             = local.secrets
  model_source        = var.model_source
  host                = each.value.edge_host
  tls_secret          = var.edge_tls_secret
  managed_certificate = each.value.managed_certificate
  static_ip_name      = each.value.edge_ip_name
  pod_monitor         = var.pod_monitor
}
