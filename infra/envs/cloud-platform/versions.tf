terraform {
  required_version = "~> 1.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.14"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "~> 2.35"
    }
    helm = {
      source  = "hashicorp/helm"
      version = "~> 2.17"
    }
  }
  # Remote state with locking (GCS). The bucket is given at init, not here:
  #   gsutil mb -l EU gs://PROJECT-voicemesh-tfstate && gsutil versioning set on gs://PROJECT-voicemesh-tfstate
  #   terraform init -backend-config="bucket=PROJECT-voicemesh-tfstate" -backend-config="prefix=voicemesh/platform"
  # envs/cloud-workloads reads this stage's outputs from there (terraform_remote_state).
  # Commit the .terraform.lock.hcl the first init writes (it needs the registry; not done here).
  backend "gcs" {}
}
