variable "project" {
  type = string
}

variable "state_bucket" {
  description = "The GCS bucket holding envs/cloud-platform's state (prefix voicemesh/platform)."
  type        = string
}

variable "workloads" {
  description = "voicemesh.workloads in the container layout: `voicemesh infra render --profile gpu --out workloads.auto.tfvars.json`."
  type = map(object({
    argv   = list(string)
    env    = map(string)
    mounts = map(object({ path = string, mount_path = string }))
  }))
}

variable "region_capacity" {
  description = "The region workload's --max-concurrent (written by `voicemesh infra render`)."
  type        = number
}

variable "image" {
  description = "The voicemesh image, e.g. europe-docker.pkg.dev/PROJECT/voicemesh/voicemesh:0.1.0 (docs/deploy.md)."
  type        = string
}

variable "model_source" {
  description = "The bucket mirror of the models (docs/deploy.md), e.g. https://storage.googleapis.com/PROJECT-voicemesh-models/v1."
  type        = string
}

variable "llm_image" {
  description = "vLLM's image of the profile's vLLM version: `voicemesh infra render` writes it beside the workloads."
  type        = string
}
