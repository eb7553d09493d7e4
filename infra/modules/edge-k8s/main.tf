# The edge on CPU nodes, as plain objects (no provider: `objects` is applied by envs/cloud-workloads
# and rendered offline by envs/k8s-render). The cloud twin of modules/edge-local:
#   edge-local process             -> Deployment "edge", container "edge": the same command line
#                                     (var.workloads.edge, voicemesh.workloads)
#   registry.json from `infra up`  -> ConfigMap built from the region modules' records (the edge
#                                     watches the mounted file, so a new region needs no restart)
#   the local Redis                -> this region's managed Redis (sessions + breaker state)
#   <state>/api-key, admin-key     -> Secrets mounted as files (--api-keys-file, --admin-keys-file)
#   <state>/region-keys.json       -> the Secret shared with the regions
#   models (Piper, Silero)         -> $VOICEMESH_HOME/models, a hostPath filled by a DaemonSet
#   127.0.0.1:PORT                 -> Ingress with TLS (the front door) -> ClusterIP Service (NEG)
# The edge spends CPU on VAD and relaying, so CPU is the right scaling signal here (unlike regions).

locals {
  port = 8080
  # SIGTERM drains (docs/resume.md): new sessions refused, running answers get VOICEMESH_DRAIN_S,
  # then every session is snapshotted and told to resume elsewhere. preStop first waits for the
  # load balancer to stop sending new clients here; the grace period covers both plus the writes.
  drain_seconds = tonumber(var.workloads.edge.env["VOICEMESH_DRAIN_S"])
  grace_seconds = var.prestop_seconds + local.drain_seconds + 10
  labels = {
    "app.kubernetes.io/name"     = "voicemesh-edge"
    "app.kubernetes.io/instance" = var.name
  }
  metadata = { name = var.name, namespace = var.namespace, labels = local.labels }
  registry = "${var.name}-registry"
}

module "pod" {
  source = "../k8s-common"
  image  = var.image
  containers = {
    edge = {
      process = var.workloads.edge
      values = {
        "{port}"      = tostring(local.port)
        "{location}"  = "${var.location.lat},${var.location.lon}"
        "{redis_url}" = var.redis_url
      }
      writes_models = false
    }
  }
  secrets             = var.secrets
  registry_config_map = local.registry
  model_cache_path    = var.model_cache_path
}

module "cache" {
  source           = "../model-cache-k8s"
  name             = var.name
  namespace        = var.namespace
  labels           = local.labels
  image            = var.image
  workload         = var.workloads.edge_model_fetch
  model_source     = var.model_source
  secrets          = var.secrets
  model_cache_path = var.model_cache_path
  node_selector    = var.cpu_node_selector
}

locals {
  config_map = {
    apiVersion = "v1"
    kind       = "ConfigMap"
    metadata   = { name = local.registry, namespace = var.namespace, labels = local.labels }
    data       = { "registry.json" = jsonencode({ regions = var.regions, source = "terraform:cloud" }) }
  }

  deployment = {
    apiVersion = "apps/v1"
    kind       = "Deployment"
    metadata   = local.metadata
    spec = {
      replicas = var.min_replicas # the HPA owns the count afterwards (the apply ignores it)
      selector = { matchLabels = local.labels }
      template = {
        metadata = { labels = local.labels }
        spec = {
          nodeSelector                  = var.cpu_node_selector
          terminationGracePeriodSeconds = local.grace_seconds
          securityContext               = module.pod.pod_security
          containers = [merge(module.pod.containers.edge, {
            ports          = [{ name = "http", containerPort = local.port }]
            lifecycle      = { preStop = { exec = { command = ["sleep", tostring(var.prestop_seconds)] } } }
            resources      = { requests = { cpu = "1", memory = "1Gi" }, limits = { memory = "2Gi" } }
            readinessProbe = { httpGet = { path = "/health", port = "http" }, periodSeconds = 5 }
            livenessProbe  = { httpGet = { path = "/health", port = "http" }, periodSeconds = 10, failureThreshold = 6 }
          })]
          volumes = module.pod.volumes
        }
      }
    }
  }

  # Behind the Ingress only: container-native load balancing (NEG) sends each connection straight
  # to a pod, and the BackendConfig holds WebSockets open (GKE's default backend timeout is 30 s).
  service = {
    apiVersion = "v1"
    kind       = "Service"
    metadata = merge(local.metadata, {
      annotations = {
        "cloud.google.com/neg"            = jsonencode({ ingress = true })
        "cloud.google.com/backend-config" = jsonencode({ default = var.name })
      }
    })
    spec = {
      type     = "ClusterIP"
      selector = local.labels
      ports    = [{ name = "http", port = local.port, targetPort = "http", protocol = "TCP" }]
    }
  }

  backend_config = {
    apiVersion = "cloud.google.com/v1"
    kind       = "BackendConfig"
    metadata   = local.metadata
    spec = {
      timeoutSec         = var.websocket_timeout_s # a WebSocket lives at most this long; clients resume
      connectionDraining = { drainingTimeoutSec = local.grace_seconds }
      healthCheck        = { type = "HTTP", requestPath = "/health", port = local.port, checkIntervalSec = 5 }
    }
  }

  # The front door: TLS ends here (the certificate in var.tls_secret, or a Google-managed one named
  # in var.managed_certificate), plain HTTP inside the VPC to the edge pods.
  ingress = {
    apiVersion = "networking.k8s.io/v1"
    kind       = "Ingress"
    metadata = merge(local.metadata, {
      annotations = merge(
        {
          "kubernetes.io/ingress.class"                 = "gce"
          "kubernetes.io/ingress.allow-http"            = "false"
          "kubernetes.io/ingress.global-static-ip-name" = var.static_ip_name
        },
        { for k, v in { "networking.gke.io/managed-certificates" = var.managed_certificate } : k => v if v != "" },
      )
    })
    spec = merge(
      {
        defaultBackend = { service = { name = var.name, port = { name = "http" } } }
        rules = [{
          host = var.host
          http = { paths = [{ path = "/", pathType = "Prefix", backend = { service = { name = var.name, port = { name = "http" } } } }] }
        }]
      },
      { for k, v in { tls = [{ hosts = [var.host], secretName = var.tls_secret }] } : k => v if var.tls_secret != "" },
    )
  }

  autoscaler = {
    apiVersion = "autoscaling/v2"
    kind       = "HorizontalPodAutoscaler"
    metadata   = local.metadata
    spec = {
      minReplicas    = var.min_replicas
      maxReplicas    = var.max_replicas
      scaleTargetRef = { apiVersion = "apps/v1", kind = "Deployment", name = var.name }
      metrics = [{
        type     = "Resource"
        resource = { name = "cpu", target = { type = "Utilization", averageUtilization = 60 } }
      }]
      behavior = {
        scaleDown = {
          stabilizationWindowSeconds = 600 # scaling down cuts live sessions: be slow
          selectPolicy               = "Min"
          policies                   = [{ type = "Pods", value = 1, periodSeconds = 120 }]
        }
      }
    }
  }

  disruption_budget = {
    apiVersion = "policy/v1"
    kind       = "PodDisruptionBudget"
    metadata   = local.metadata
    spec       = { minAvailable = 1, selector = { matchLabels = local.labels } }
  }

  # prometheus-operator's scrape of the edge pods: the same metrics credential as the regions' (the
  # edge checks it against the region key set it mounts), `tier` and `id` labels as the local
  # Prometheus sets them (the rules and the dashboard read them).
  pod_monitor = {
    apiVersion = "monitoring.coreos.com/v1"
    kind       = "PodMonitor"
    metadata   = local.metadata
    spec = {
      selector = { matchLabels = local.labels }
      podMetricsEndpoints = [{
        port          = "http"
        path          = "/metrics"
        authorization = { type = "Bearer", credentials = { name = var.metrics_token_secret, key = "token" } }
        relabelings = [
          { action = "replace", targetLabel = "tier", replacement = "edge" },
          { action = "replace", sourceLabels = ["__meta_kubernetes_pod_name"], targetLabel = "id" },
        ]
      }]
    }
  }
}
