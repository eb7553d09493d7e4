# Stage 2 of 2, the workloads: every Kubernetes object of modules/cloud-objects (the same objects
# envs/k8s-render renders offline and the tests validate), applied with kubernetes_manifest into
# the clusters envs/cloud-platform (stage 1) made, whose outputs are read from its remote state.
# The CRD-based objects (ScaledObject, PodMonitor, BackendConfig) plan because stage 1 installed
# their CRDs. Order: stage 1 apply, then this one; docs/deploy.md.

provider "google" {
  project = var.project
}

data "google_client_config" "current" {}

data "terraform_remote_state" "platform" {
  backend = "gcs"
  config = {
    bucket = var.state_bucket
    prefix = "voicemesh/platform"
  }
}

locals {
  platform = data.terraform_remote_state.platform.outputs
  # Object key: kind/name is unique per cluster (tests/infra/test_k8s_manifests.py checks it).
  # The Namespace is stage 1's (the managed certificate lives in it).
  objects = {
    for id, items in module.objects.objects : id => {
      for o in items : "${o.kind}/${o.metadata.name}" => o if o.kind != "Namespace"
    }
  }
  # Set by KEDA (regions) and the HPA (edges) after the first apply: never reconciled back.
  computed = ["spec.replicas", "metadata.annotations", "metadata.labels"]
}

module "objects" {
  source          = "../../modules/cloud-objects"
  regions         = local.platform.regions
  workloads       = var.workloads
  region_capacity = var.region_capacity
  image           = var.image
  llm_image       = var.llm_image
  model_source    = var.model_source
}

provider "kubernetes" {
  alias                  = "eu_west"
  host                   = "https://${local.platform.clusters["eu-west"].endpoint}"
  token                  = data.google_client_config.current.access_token
  cluster_ca_certificate = base64decode(local.platform.clusters["eu-west"].cluster_ca_certificate)
}

provider "kubernetes" {
  alias                  = "us_east"
  host                   = "https://${local.platform.clusters["us-east"].endpoint}"
  token                  = data.google_client_config.current.access_token
  cluster_ca_certificate = base64decode(local.platform.clusters["us-east"].cluster_ca_certificate)
}

resource "kubernetes_manifest" "eu_west" {
  provider        = kubernetes.eu_west
  for_each        = local.objects["eu-west"]
  manifest        = each.value
  computed_fields = local.computed
}

resource "kubernetes_manifest" "us_east" {
  provider        = kubernetes.us_east
  for_each        = local.objects["us-east"]
  manifest        = each.value
  computed_fields = local.computed
}
