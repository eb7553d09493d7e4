terraform {
  required_version = ">= 1.0"
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = ">= 2.23"
    }
    helm = {
      source  = "hashicorp/helm"
      version = ">= 2.12, < 3.0"
    }
  }
  # A real deployment keeps state remotely, e.g.:
  # backend "gcs" { bucket = "my-voicemesh-tfstate", prefix = "cloud-example" }
}
