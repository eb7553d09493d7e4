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
  }
  # Remote state, as envs/cloud-platform's, under its own prefix:
  #   terraform init -backend-config="bucket=PROJECT-voicemesh-tfstate" -backend-config="prefix=voicemesh/workloads"
  backend "gcs" {}
}
