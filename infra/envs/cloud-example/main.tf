# One cloud (GKE), two regions. Each region is a cluster with:
#   - a CPU node pool for the edge (modules/edge), and
#   - a tainted GPU node pool (L4, time-sliced between vLLM and the region container) for
#     modules/region-k8s, plus KEDA scaling it on the region's queue depth.
# Every edge's registry lists both regions (internal load balancers with global access), so the
# router can fail over across regions exactly as it does between the local processes.
# Not applied in CI (no cloud credentials); `terraform fmt` keeps it tidy. See infra/README.md.

provider "google" {
  project = var.project
}

data "google_client_config" "current" {}

resource "google_container_cluster" "region" {
  for_each                 = var.regions
  name                     = "voicemesh-${each.key}"
  location                 = each.value.gcp_region
  remove_default_node_pool = true
  initial_node_count       = 1
  release_channel {
    channel = "REGULAR"
  }
}

resource "google_container_node_pool" "cpu" {
  for_each = var.regions
  name     = "cpu"
  cluster  = google_container_cluster.region[each.key].id
  autoscaling {
    min_node_count = 1
    max_node_count = 5
  }
  node_config {
    machine_type = "c3-standard-8"
    labels       = { "voicemesh.io/pool" = "cpu" }
  }
}

resource "google_container_node_pool" "gpu" {
  for_each = var.regions
  name     = "gpu"
  cluster  = google_container_cluster.region[each.key].id
  autoscaling {
    min_node_count = 1
    max_node_count = 4
  }
  node_config {
    machine_type = "g2-standard-12"
    disk_size_gb = 200 # the node-local model cache (Qwen3-8B + Whisper + Kokoro)
    guest_accelerator {
      type  = var.gpu_type
      count = 1
      gpu_driver_installation_config {
        gpu_driver_version = "LATEST"
      }
      gpu_sharing_config {
        gpu_sharing_strategy       = "TIME_SHARING"
        max_shared_clients_per_gpu = 2 # vLLM + the region container
      }
    }
    taint {
      key    = "nvidia.com/gpu"
      value  = "present"
      effect = "NO_SCHEDULE"
    }
  }
}

# Kubernetes and Helm providers cannot be created with for_each: one alias per cluster.
provider "kubernetes" {
  alias                  = "eu_west"
  host                   = "https://${google_container_cluster.region["eu-west"].endpoint}"
  token                  = data.google_client_config.current.access_token
  cluster_ca_certificate = base64decode(google_container_cluster.region["eu-west"].master_auth[0].cluster_ca_certificate)
}

provider "kubernetes" {
  alias                  = "us_east"
  host                   = "https://${google_container_cluster.region["us-east"].endpoint}"
  token                  = data.google_client_config.current.access_token
  cluster_ca_certificate = base64decode(google_container_cluster.region["us-east"].master_auth[0].cluster_ca_certificate)
}

provider "helm" {
  alias = "eu_west"
  kubernetes {
    host                   = "https://${google_container_cluster.region["eu-west"].endpoint}"
    token                  = data.google_client_config.current.access_token
    cluster_ca_certificate = base64decode(google_container_cluster.region["eu-west"].master_auth[0].cluster_ca_certificate)
  }
}

provider "helm" {
  alias = "us_east"
  kubernetes {
    host                   = "https://${google_container_cluster.region["us-east"].endpoint}"
    token                  = data.google_client_config.current.access_token
    cluster_ca_certificate = base64decode(google_container_cluster.region["us-east"].master_auth[0].cluster_ca_certificate)
  }
}

locals {
  internal_lb = {
    "networking.gke.io/load-balancer-type"                         = "Internal"
    "networking.gke.io/internal-load-balancer-allow-global-access" = "true"
  }
  # Prometheus (GKE managed collection's frontend) and Redis (Memorystore) are per cluster;
  # their addresses are inputs of a real deployment.
  prometheus_url = "http://prometheus-frontend.monitoring.svc.cluster.local:9090"
  redis_url      = "redis://10.0.0.3:6379/0"
}

# KEDA (ScaledObject CRD) in each cluster.
resource "helm_release" "keda_eu_west" {
  provider         = helm.eu_west
  name             = "keda"
  repository       = "https://kedacore.github.io/charts"
  chart            = "keda"
  namespace        = "keda"
  create_namespace = true
}

resource "helm_release" "keda_us_east" {
  provider         = helm.us_east
  name             = "keda"
  repository       = "https://kedacore.github.io/charts"
  chart            = "keda"
  namespace        = "keda"
  create_namespace = true
}

module "region_eu_west" {
  source               = "../../modules/region-k8s"
  providers            = { kubernetes = kubernetes.eu_west }
  region_id            = "eu-west"
  image                = var.image
  location             = var.regions["eu-west"].location
  residency            = var.regions["eu-west"].residency
  prometheus_url       = local.prometheus_url
  service_annotations  = local.internal_lb
  region_keys_secret   = var.region_keys_secret
  metrics_token_secret = var.region_metrics_secret
  pod_monitor          = var.region_pod_monitor
  edge_cidrs           = var.edge_cidrs
  depends_on           = [helm_release.keda_eu_west, google_container_node_pool.gpu]
}

module "region_us_east" {
  source               = "../../modules/region-k8s"
  providers            = { kubernetes = kubernetes.us_east }
  region_id            = "us-east"
  image                = var.image
  location             = var.regions["us-east"].location
  residency            = var.regions["us-east"].residency
  prometheus_url       = local.prometheus_url
  service_annotations  = local.internal_lb
  region_keys_secret   = var.region_keys_secret
  metrics_token_secret = var.region_metrics_secret
  pod_monitor          = var.region_pod_monitor
  edge_cidrs           = var.edge_cidrs
  depends_on           = [helm_release.keda_us_east, google_container_node_pool.gpu]
}

module "edge_eu_west" {
  source             = "../../modules/edge"
  providers          = { kubernetes = kubernetes.eu_west }
  image              = var.image
  regions            = [module.region_eu_west.region, module.region_us_east.region]
  api_keys_secret    = var.api_keys_secret
  region_keys_secret = var.region_keys_secret
  redis_url          = local.redis_url
  depends_on         = [google_container_node_pool.cpu]
}

module "edge_us_east" {
  source             = "../../modules/edge"
  providers          = { kubernetes = kubernetes.us_east }
  image              = var.image
  regions            = [module.region_us_east.region, module.region_eu_west.region]
  api_keys_secret    = var.api_keys_secret
  region_keys_secret = var.region_keys_secret
  redis_url          = local.redis_url
  depends_on         = [google_container_node_pool.cpu]
}
