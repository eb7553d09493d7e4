# Stage 1 of 2, the platform: what the workloads need before any of their objects can be planned.
# Per region: a GKE cluster (CPU pool for the edge, tainted GPU pool for the region), a Redis
# (Memorystore) that only that region's edges use, a reserved internal address for the region's
# internal load balancer, a reserved global address and a Google-managed certificate for the edge's
# front door; and in each cluster the CRDs the workloads use: KEDA (ScaledObject) and
# prometheus-operator (PodMonitor, PrometheusRule), from Helm charts at pinned versions (the
# versions infra/manifests.py validates against). Then envs/cloud-workloads (stage 2) applies every
# Kubernetes object; its CRD-based objects plan because the CRDs exist by then. docs/deploy.md.
# Not applied here (no cloud credentials, no google/helm/kubernetes provider offline).

provider "google" {
  project = var.project
}

data "google_client_config" "current" {}

locals {
  keda_chart_version = "2.16.1" # KEDA 2.16.1: infra/manifests.py KEDA_CHART
  # prometheus-operator v0.80.1's CRDs (infra/manifests.py PROMETHEUS_OPERATOR_CRDS_CHART); check
  # `helm show chart prometheus-community/prometheus-operator-crds --version X` says appVersion v0.80.1.
  prometheus_crds_chart_version = "18.0.1"
  kube_prometheus_chart_version = "69.8.2" # the operator + Prometheus; its CRDs come from the chart above
}

resource "google_container_cluster" "region" {
  for_each                 = var.regions
  name                     = "voicemesh-${each.key}"
  location                 = each.value.gcp_region
  remove_default_node_pool = true
  initial_node_count       = 1
  networking_mode          = "VPC_NATIVE"
  ip_allocation_policy {}
  release_channel {
    channel = "REGULAR" # Kubernetes 1.33 at the time of writing: infra/manifests.py K8S_VERSION
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
    disk_size_gb = 200 # the node-local model cache (Qwen3-8B + Whisper large-v3 + Kokoro)
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

# One Redis per region, in the region's network: its edges keep sessions, client secrets and breaker
# state there, close to them. Regions never share one (docs/deploy.md: keys and sessions across regions).
resource "google_redis_instance" "edge" {
  for_each           = var.regions
  name               = "voicemesh-${each.key}"
  region             = each.value.gcp_region
  tier               = "STANDARD_HA"
  memory_size_gb     = var.redis_memory_gb
  redis_version      = "REDIS_7_2"
  authorized_network = google_container_cluster.region[each.key].network
}

resource "google_compute_address" "region" {
  for_each     = var.regions
  name         = "voicemesh-region-${each.key}"
  region       = each.value.gcp_region
  address_type = "INTERNAL"
  subnetwork   = google_container_cluster.region[each.key].subnetwork
}

resource "google_compute_global_address" "edge" {
  for_each = var.regions
  name     = "voicemesh-edge-${each.key}"
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

module "crds_eu_west" {
  source    = "./crds"
  providers = { helm = helm.eu_west, kubernetes = kubernetes.eu_west }
  versions = {
    keda                  = local.keda_chart_version
    prometheus_crds       = local.prometheus_crds_chart_version
    kube_prometheus_stack = local.kube_prometheus_chart_version
  }
  managed_certificate = { name = "voicemesh-edge-eu-west", domain = var.regions["eu-west"].edge_host }
  depends_on          = [google_container_node_pool.cpu]
}

module "crds_us_east" {
  source    = "./crds"
  providers = { helm = helm.us_east, kubernetes = kubernetes.us_east }
  versions = {
    keda                  = local.keda_chart_version
    prometheus_crds       = local.prometheus_crds_chart_version
    kube_prometheus_stack = local.kube_prometheus_chart_version
  }
  managed_certificate = { name = "voicemesh-edge-us-east", domain = var.regions["us-east"].edge_host }
  depends_on          = [google_container_node_pool.cpu]
}
