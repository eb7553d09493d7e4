# Every Kubernetes object of the cloud deployment, rendered offline: no provider, no credentials.
# `voicemesh infra validate` (and tests/infra/test_k8s_manifests.py) applies this env with the real
# Terraform and validates each object of the `objects` output against the Kubernetes API schemas
# of a pinned version and the CRDs' schemas. envs/cloud-workloads applies the same module's objects.
#
#   voicemesh infra render --profile gpu --out workloads.auto.tfvars.json   # the processes
#   terraform apply   # with regions.auto.tfvars.json (an example is beside this file)

module "objects" {
  source          = "../../modules/cloud-objects"
  regions         = var.regions
  workloads       = var.workloads
  image           = var.image
  llm_image       = var.llm_image
  model_source    = var.model_source
  region_capacity = var.region_capacity
  edge_tls_secret = var.edge_tls_secret
  pod_monitor     = var.pod_monitor
}
