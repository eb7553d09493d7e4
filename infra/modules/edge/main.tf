# The edge on CPU nodes: the cloud twin of the edge `voicemesh up` starts locally.
#   registry.json from `infra up` -> ConfigMap built from the region modules' outputs (the edge
#                                    watches the mounted file, so a new region needs no restart)
#   in-memory breaker state        -> Redis shared by every replica
#   <state>/region-keys.json       -> the Secret var.region_keys_secret (shared with the regions)
# The edge spends CPU on VAD and relaying, so CPU is the right scaling signal here (unlike regions).

locals {
  region_ca = var.region_ca_secret != ""
  region_args = concat(
    ["--region-keys", "/etc/voicemesh/region-keys/region-keys.json"],
    local.region_ca ? ["--region-ca", "/etc/voicemesh/region-ca/ca.crt"] : [],
  )
  # SIGTERM drains (docs/resume.md): new sessions refused, running answers get drain_seconds, then
  # every session is snapshotted and told to resume elsewhere. preStop first waits for the Service
  # to stop sending new clients here; the grace period covers both plus the snapshot writes.
  grace_seconds = var.prestop_seconds + var.drain_seconds + 10
  labels = {
    "app.kubernetes.io/name"     = "voicemesh-edge"
    "app.kubernetes.io/instance" = var.name
  }
}

resource "kubernetes_config_map_v1" "registry" {
  metadata {
    name      = "${var.name}-registry"
    namespace = var.namespace
  }
  data = {
    "registry.json" = jsonencode({ regions = var.regions, source = "terraform:cloud" })
  }
}

resource "kubernetes_deployment_v1" "edge" {
  metadata {
    name      = var.name
    namespace = var.namespace
    labels    = local.labels
  }
  spec {
    replicas = var.min_replicas
    selector {
      match_labels = local.labels
    }
    template {
      metadata {
        labels = local.labels
      }
      spec {
        node_selector                    = var.cpu_node_selector
        termination_grace_period_seconds = local.grace_seconds
        container {
          name  = "edge"
          image = var.image
          command = concat([
            "voicemesh", "edge", "serve",
            "--registry", "/etc/voicemesh/registry/registry.json",
            "--host", "0.0.0.0", "--port", "8080",
            "--store-url", var.redis_url,
          ], local.region_args)
          port {
            name           = "http"
            container_port = 8080
          }
          env_from {
            secret_ref {
              name = var.api_keys_secret
            }
          }
          env {
            name  = "VOICEMESH_DRAIN_S"
            value = tostring(var.drain_seconds)
          }
          lifecycle {
            pre_stop {
              exec {
                command = ["sleep", tostring(var.prestop_seconds)]
              }
            }
          }
          resources {
            requests = { cpu = "1", memory = "1Gi" }
            limits   = { memory = "2Gi" }
          }
          volume_mount {
            name       = "registry"
            mount_path = "/etc/voicemesh/registry"
            read_only  = true
          }
          volume_mount {
            name       = "region-keys"
            mount_path = "/etc/voicemesh/region-keys"
            read_only  = true
          }
          dynamic "volume_mount" {
            for_each = local.region_ca ? [1] : []
            content {
              name       = "region-ca"
              mount_path = "/etc/voicemesh/region-ca"
              read_only  = true
            }
          }
          readiness_probe {
            http_get {
              path = "/health"
              port = "http"
            }
            period_seconds = 5
          }
          liveness_probe {
            http_get {
              path = "/health"
              port = "http"
            }
            period_seconds    = 10
            failure_threshold = 6
          }
        }
        volume {
          name = "registry"
          config_map {
            name = kubernetes_config_map_v1.registry.metadata[0].name
          }
        }
        volume {
          name = "region-keys"
          secret {
            secret_name  = var.region_keys_secret
            default_mode = "0400"
          }
        }
        dynamic "volume" {
          for_each = local.region_ca ? [1] : []
          content {
            name = "region-ca"
            secret {
              secret_name = var.region_ca_secret
            }
          }
        }
      }
    }
  }
  lifecycle {
    ignore_changes = [spec[0].replicas] # set by the HPA
  }
}

resource "kubernetes_service_v1" "edge" {
  metadata {
    name        = var.name
    namespace   = var.namespace
    labels      = local.labels
    annotations = var.service_annotations
  }
  spec {
    type     = "LoadBalancer"
    selector = local.labels
    # WebSocket sessions are long: keep a client on the replica that holds its session.
    session_affinity = "ClientIP"
    port {
      name        = "http"
      port        = 443
      target_port = "http"
    }
  }
}

resource "kubernetes_horizontal_pod_autoscaler_v2" "edge" {
  metadata {
    name      = var.name
    namespace = var.namespace
  }
  spec {
    min_replicas = var.min_replicas
    max_replicas = var.max_replicas
    scale_target_ref {
      api_version = "apps/v1"
      kind        = "Deployment"
      name        = kubernetes_deployment_v1.edge.metadata[0].name
    }
    metric {
      type = "Resource"
      resource {
        name = "cpu"
        target {
          type                = "Utilization"
          average_utilization = 60
        }
      }
    }
    behavior {
      scale_down {
        stabilization_window_seconds = 600 # scaling down cuts live sessions: be slow
        select_policy                = "Min"
        policy {
          type           = "Pods"
          value          = 1
          period_seconds = 120
        }
      }
    }
  }
}

resource "kubernetes_pod_disruption_budget_v1" "edge" {
  metadata {
    name      = var.name
    namespace = var.namespace
  }
  spec {
    min_available = "1"
    selector {
      match_labels = local.labels
    }
  }
}
