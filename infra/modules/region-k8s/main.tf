# A region on Kubernetes: the cloud twin of modules/region-local.
#   region-local process            -> Deployment "region-<id>" (container "region")
#   shared local vLLM (llm-local)   -> a vLLM container in the same pod (loopback, one GPU each)
#   ~/.cache/voicemesh/models       -> node-local hostPath filled once by the model-cache DaemonSet
#   start.sh waiting for /health    -> startup/readiness probes on /health (200 only when warm)
#   stop.sh (SIGTERM, grace)        -> terminationGracePeriodSeconds + preStop drain
#   --keys <state>/region-keys.json -> the Secret var.region_keys_secret, mounted read-only
#   loopback only                   -> a NetworkPolicy: edge pods (and the metrics scraper) only
# Probes call /health without a token: it answers ready/not-ready (200/503) and nothing else.
# The scraper cannot mint region tokens: it presents the metrics credential, a long-lived bearer
# secret that regions accept on GET /metrics only and know only by its SHA-256 (in the key set).
# `voicemesh infra rotate-key --metrics --keys FILE` writes it to FILE.metrics-token; upload the
# key set first, then the secret (on a rotation, pipe `--dry-run=client -o yaml` to `kubectl apply -f -`):
#   kubectl -n NAMESPACE create secret generic voicemesh-region-metrics --from-file=token=FILE.metrics-token
# With prometheus-operator, set pod_monitor = true (a PodMonitor reading that Secret). With a plain
# Prometheus, mount the Secret into it and give the regions a job of their own (the credential
# must not go to other pods):
#   - job_name: voicemesh-regions
#     kubernetes_sd_configs: [{ role: pod }]
#     relabel_configs:
#       - { source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name], regex: voicemesh-region, action: keep }
#       - { source_labels: [__meta_kubernetes_pod_container_port_name], regex: http, action: keep }
#       - { source_labels: [__meta_kubernetes_namespace], target_label: namespace }  # KEDA's query
#       - { source_labels: [__meta_kubernetes_pod_name], target_label: pod }         # needs both
#     authorization: { type: Bearer, credentials_file: /etc/prometheus/secrets/voicemesh-region-metrics/token }
# Scaling follows the region's own queue (KEDA on Prometheus), never CPU: a GPU pod is busy
# long before its CPU is.

locals {
  name = "region-${var.region_id}"
  labels = {
    "app.kubernetes.io/name"     = "voicemesh-region"
    "app.kubernetes.io/instance" = local.name
    "voicemesh.io/region"        = var.region_id
  }
  tls        = var.tls_secret != ""
  scheme     = local.tls ? "HTTPS" : "HTTP"
  url_scheme = local.tls ? "https" : "http"
  region_args = concat(
    ["--keys", "/etc/voicemesh/region-keys/region-keys.json"],
    local.tls ? ["--tls-cert", "/etc/voicemesh/tls/tls.crt", "--tls-key", "/etc/voicemesh/tls/tls.key"] : [],
  )
  # The name the region's certificate carries, when a scraper checks it on a pod address.
  service_host = "${local.name}.${var.namespace}.svc.cluster.local"
  scrape_annotations = {
    "prometheus.io/scrape" = "true"
    "prometheus.io/port"   = "9001"
    "prometheus.io/path"   = "/metrics"
  }
  gpu_toleration = {
    key      = var.gpu_taint_key
    operator = "Exists"
    effect   = "NoSchedule"
  }
}

resource "kubernetes_daemon_set_v1" "model_cache" {
  metadata {
    name      = "${local.name}-model-cache"
    namespace = var.namespace
    labels    = local.labels
  }
  spec {
    selector {
      match_labels = { "voicemesh.io/model-cache" = var.region_id }
    }
    template {
      metadata {
        labels = { "voicemesh.io/model-cache" = var.region_id }
      }
      spec {
        node_selector = var.gpu_node_selector
        toleration {
          key      = local.gpu_toleration.key
          operator = local.gpu_toleration.operator
          effect   = local.gpu_toleration.effect
        }
        # Fill the node's cache once (idempotent, verified by checksum), then idle: region pods
        # scheduled on this node start without downloading anything.
        init_container {
          name    = "fetch"
          image   = var.image
          command = ["voicemesh", "models", "fetch", "--no-runtime"]
          env {
            name  = "VOICEMESH_HOME"
            value = "/cache"
          }
          env {
            name  = "VOICEMESH_PROFILE"
            value = "gpu"
          }
          volume_mount {
            name       = "models"
            mount_path = "/cache/models"
          }
        }
        container {
          name    = "idle"
          image   = var.image
          command = ["sleep", "infinity"]
          resources {
            requests = { cpu = "10m", memory = "16Mi" }
          }
        }
        volume {
          name = "models"
          host_path {
            path = var.model_cache_path
            type = "DirectoryOrCreate"
          }
        }
      }
    }
  }
}

resource "kubernetes_deployment_v1" "region" {
  metadata {
    name      = local.name
    namespace = var.namespace
    labels    = local.labels
  }
  spec {
    replicas = var.min_replicas # KEDA owns the count afterwards
    selector {
      match_labels = local.labels
    }
    strategy {
      type = "RollingUpdate"
      rolling_update {
        max_unavailable = "0" # a new pod must be warm before an old one goes
        max_surge       = "1"
      }
    }
    template {
      metadata {
        labels = local.labels
        # With a PodMonitor, no annotations: an annotation job would scrape without the credential.
        annotations = var.pod_monitor ? {} : local.scrape_annotations
      }
      spec {
        node_selector                    = var.gpu_node_selector
        termination_grace_period_seconds = 90 # in-flight turns finish; the router moves new ones
        toleration {
          key      = local.gpu_toleration.key
          operator = local.gpu_toleration.operator
          effect   = local.gpu_toleration.effect
        }

        container {
          name  = "vllm"
          image = var.vllm_image
          args = [
            "--model", var.llm_model,
            "--served-model-name", var.llm_served_name,
            "--host", "127.0.0.1", "--port", "8000",
            "--max-model-len", "8192",
            # The GPU is time-sliced with the region container (Whisper + Kokoro need ~3 GiB).
            "--gpu-memory-utilization", "0.80",
          ]
          env {
            name  = "HF_HUB_OFFLINE"
            value = "1"
          }
          resources {
            limits = { "nvidia.com/gpu" = "1" }
          }
          volume_mount {
            name       = "models"
            mount_path = "/models"
            read_only  = true
          }
          startup_probe {
            http_get {
              path = "/health"
              port = 8000
            }
            period_seconds    = 5
            failure_threshold = 120 # loading weights from the node cache: up to 10 min
          }
        }

        container {
          name  = "region"
          image = var.image
          command = concat([
            "voicemesh", "region", "serve",
            "--id", var.region_id,
            "--host", "0.0.0.0", "--port", "9001",
            "--llm-url", "http://127.0.0.1:8000/v1",
            "--profile", "gpu",
            "--max-concurrent", tostring(var.max_concurrent),
            "--max-queue", tostring(var.max_queue),
          ], local.region_args)
          port {
            name           = "http"
            container_port = 9001
          }
          env {
            name  = "VOICEMESH_HOME"
            value = "/cache"
          }
          resources {
            requests = { cpu = "2", memory = "6Gi" }
            limits   = { "nvidia.com/gpu" = "1", memory = "8Gi" }
          }
          volume_mount {
            name       = "models"
            mount_path = "/cache/models"
            read_only  = true
          }
          volume_mount {
            name       = "region-keys"
            mount_path = "/etc/voicemesh/region-keys"
            read_only  = true
          }
          dynamic "volume_mount" {
            for_each = local.tls ? [1] : []
            content {
              name       = "tls"
              mount_path = "/etc/voicemesh/tls"
              read_only  = true
            }
          }
          # /health answers 200 only once STT, LLM and TTS are warm: no turn reaches a cold pod.
          startup_probe {
            http_get {
              path   = "/health"
              port   = "http"
              scheme = local.scheme
            }
            period_seconds    = 5
            failure_threshold = 120
          }
          readiness_probe {
            http_get {
              path   = "/health"
              port   = "http"
              scheme = local.scheme
            }
            period_seconds    = 2
            failure_threshold = 2
          }
          # Liveness on the socket, not /health: a saturated region must not be restarted.
          liveness_probe {
            tcp_socket {
              port = "http"
            }
            period_seconds    = 10
            failure_threshold = 6
          }
          lifecycle {
            pre_stop {
              exec {
                # Leave the Service first, then let SIGTERM drain the turns in flight.
                command = ["sleep", "10"]
              }
            }
          }
        }

        volume {
          name = "models"
          host_path {
            path = var.model_cache_path
            type = "Directory"
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
          for_each = local.tls ? [1] : []
          content {
            name = "tls"
            secret {
              secret_name  = var.tls_secret
              default_mode = "0400"
            }
          }
        }
      }
    }
  }
  lifecycle {
    ignore_changes = [spec[0].replicas] # set by KEDA
  }
  depends_on = [kubernetes_daemon_set_v1.model_cache]
}

resource "kubernetes_service_v1" "region" {
  metadata {
    name        = local.name
    namespace   = var.namespace
    labels      = local.labels
    annotations = var.service_annotations
  }
  spec {
    selector = local.labels
    type     = length(var.service_annotations) > 0 ? "LoadBalancer" : "ClusterIP"
    port {
      name        = "http"
      port        = 9001
      target_port = "http"
    }
  }
}

# Only edges (this cluster's pods, or other clusters' ranges through the internal load balancer) and
# the metrics scraper reach a region pod; the kubelet's probes come from the node and are not
# subject to the policy. Tokens are still checked: the policy is the second wall, not the first.
resource "kubernetes_network_policy_v1" "region" {
  metadata {
    name      = local.name
    namespace = var.namespace
  }
  spec {
    pod_selector {
      match_labels = local.labels
    }
    policy_types = ["Ingress"]
    ingress {
      from {
        namespace_selector {}
        pod_selector {
          match_labels = var.edge_pod_labels
        }
      }
      dynamic "from" {
        for_each = var.edge_cidrs
        content {
          ip_block {
            cidr = from.value
          }
        }
      }
      ports {
        port     = "9001"
        protocol = "TCP"
      }
    }
    ingress {
      from {
        namespace_selector {
          match_labels = var.metrics_namespace_labels
        }
      }
      ports {
        port     = "9001"
        protocol = "TCP"
      }
    }
  }
}

resource "kubernetes_pod_disruption_budget_v1" "region" {
  metadata {
    name      = local.name
    namespace = var.namespace
  }
  spec {
    max_unavailable = "1" # node upgrades drain one pod at a time; the router fails turns over
    selector {
      match_labels = local.labels
    }
  }
}

resource "kubernetes_manifest" "scaler" {
  manifest = {
    apiVersion = "keda.sh/v1alpha1"
    kind       = "ScaledObject"
    metadata = {
      name      = local.name
      namespace = var.namespace
    }
    spec = {
      scaleTargetRef  = { name = kubernetes_deployment_v1.region.metadata[0].name }
      minReplicaCount = var.min_replicas
      maxReplicaCount = var.max_replicas
      cooldownPeriod  = 300 # GPU pods are slow to warm: keep them a while
      triggers = [{
        type = "prometheus"
        metadata = {
          serverAddress = var.prometheus_url
          # The region's own admission queue (region/metrics.py), summed over its pods.
          query               = "sum(voicemesh_region_queued_turns{namespace=\"${var.namespace}\",pod=~\"${local.name}-.*\"})"
          threshold           = tostring(var.queue_depth_per_replica)
          activationThreshold = "0"
        }
      }]
    }
  }
}

# prometheus-operator's scrape of the region pods, with the metrics credential from a Secret in this
# namespace (never a region token: it reads GET /metrics and nothing else). With TLS, the region's
# certificate is checked against ca.crt of var.tls_secret, for the Service's name.
resource "kubernetes_manifest" "pod_monitor" {
  count = var.pod_monitor ? 1 : 0
  manifest = {
    apiVersion = "monitoring.coreos.com/v1"
    kind       = "PodMonitor"
    metadata = {
      name      = local.name
      namespace = var.namespace
      labels    = local.labels
    }
    spec = {
      selector = { matchLabels = local.labels }
      podMetricsEndpoints = [merge(
        {
          port   = "http"
          path   = "/metrics"
          scheme = local.url_scheme
          authorization = {
            type        = "Bearer"
            credentials = { name = var.metrics_token_secret, key = "token" }
          }
        },
        { for k, v in {
          tlsConfig = {
            ca         = { secret = { name = var.tls_secret, key = "ca.crt" } }
            serverName = local.service_host
          }
        } : k => v if local.tls },
      )]
    }
  }
}
