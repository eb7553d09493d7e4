# A region on Kubernetes, as plain objects (no provider: `objects` is applied by envs/cloud-workloads
# and rendered offline by envs/k8s-render). The cloud twin of modules/region-local:
#   region-local process            -> Deployment "region-<id>", container "region": the same
#                                      command line (var.workloads.region, voicemesh.workloads)
#   shared local vLLM (llm-local)   -> container "llm" in the same pod (var.llm_image: vLLM's image of the same
#                                      version) running the command line `voicemesh llm serve` runs
#   ~/.cache/voicemesh/models       -> $VOICEMESH_HOME/models, a node-local hostPath filled once by the
#                                      model-cache DaemonSet from var.model_source (a bucket mirror)
#   start.sh waiting for /health    -> startup/readiness probes on /health (200 only when warm)
#   stop.sh (SIGTERM, grace)        -> terminationGracePeriodSeconds + preStop drain
#   --keys <state>/region-keys.json -> the Secret var.secrets.region_keys, mounted read-only
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
  port       = 9001
  llm_port   = 8000
  tls        = contains(keys(var.workloads.region.mounts), "tls")
  scheme     = local.tls ? "HTTPS" : "HTTP"
  url_scheme = lower(local.scheme)
  # The name the region's certificate carries, when a scraper checks it on a pod address.
  service_host = "${local.name}.${var.namespace}.svc.cluster.local"
  scrape_annotations = {
    "prometheus.io/scrape" = "true"
    "prometheus.io/port"   = tostring(local.port)
    "prometheus.io/path"   = "/metrics"
  }
  gpu_tolerations = [{ key = var.gpu_taint_key, operator = "Exists", effect = "NoSchedule" }]
  metadata        = { name = local.name, namespace = var.namespace, labels = local.labels }
}

module "pod" {
  source = "../k8s-common"
  image  = var.image
  containers = {
    # vLLM beside the region: the region's {llm_url} points at it on loopback; it listens on the pod's
    # address for the metrics scraper only (the NetworkPolicy: its port from the metrics namespace).
    llm = { process = var.workloads.llm, values = { "{port}" = tostring(local.llm_port) }, writes_models = false }
    region = {
      process = var.workloads.region
      values = {
        "{id}"      = var.region_id
        "{port}"    = tostring(local.port)
        "{llm_url}" = "http://127.0.0.1:${local.llm_port}/v1"
      }
      writes_models = false
    }
  }
  secrets          = var.secrets
  model_cache_path = var.model_cache_path
}

module "cache" {
  source           = "../model-cache-k8s"
  name             = local.name
  namespace        = var.namespace
  labels           = local.labels
  image            = var.image
  workload         = var.workloads.model_fetch
  model_source     = var.model_source
  secrets          = var.secrets
  model_cache_path = var.model_cache_path
  node_selector    = var.gpu_node_selector
  tolerations      = local.gpu_tolerations
}

locals {
  llm_container = merge(module.pod.containers.llm, {
    image = var.llm_image
    ports = [{ name = "llm", containerPort = local.llm_port }]
    # The GPU is time-sliced with the region container (Whisper + Kokoro need ~3 GiB).
    resources = { limits = { "nvidia.com/gpu" = "1" } }
    startupProbe = {
      httpGet          = { path = "/health", port = local.llm_port }
      periodSeconds    = 5
      failureThreshold = 120 # loading weights from the node cache: up to 10 min
    }
  })

  region_container = merge(module.pod.containers.region, {
    ports = [{ name = "http", containerPort = local.port }]
    resources = {
      requests = { cpu = "2", memory = "6Gi" }
      limits   = { "nvidia.com/gpu" = "1", memory = "8Gi" }
    }
    # /health answers 200 only once STT, LLM and TTS are warm: no turn reaches a cold pod.
    startupProbe   = { httpGet = { path = "/health", port = "http", scheme = local.scheme }, periodSeconds = 5, failureThreshold = 120 }
    readinessProbe = { httpGet = { path = "/health", port = "http", scheme = local.scheme }, periodSeconds = 2, failureThreshold = 2 }
    # Liveness on the socket, not /health: a saturated region must not be restarted.
    livenessProbe = { tcpSocket = { port = "http" }, periodSeconds = 10, failureThreshold = 6 }
    # Leave the Service first, then let SIGTERM drain the turns in flight.
    lifecycle = { preStop = { exec = { command = ["sleep", "10"] } } }
  })

  deployment = {
    apiVersion = "apps/v1"
    kind       = "Deployment"
    metadata   = local.metadata
    spec = {
      replicas = var.min_replicas # KEDA owns the count afterwards (the apply ignores it: cloud-workloads)
      selector = { matchLabels = local.labels }
      strategy = {
        type          = "RollingUpdate"
        rollingUpdate = { maxUnavailable = 0, maxSurge = 1 } # a new pod must be warm before an old one goes
      }
      template = {
        metadata = {
          labels = local.labels
          # With a PodMonitor, no annotations: an annotation job would scrape without the credential.
          annotations = { for k, v in local.scrape_annotations : k => v if !var.pod_monitor }
        }
        spec = {
          nodeSelector                  = var.gpu_node_selector
          tolerations                   = local.gpu_tolerations
          terminationGracePeriodSeconds = 90 # in-flight turns finish; the router moves new ones
          securityContext               = module.pod.pod_security
          containers                    = [local.llm_container, local.region_container]
          volumes                       = module.pod.volumes
        }
      }
    }
  }

  service = {
    apiVersion = "v1"
    kind       = "Service"
    metadata   = merge(local.metadata, { annotations = var.service_annotations })
    spec = merge(
      {
        selector = local.labels
        type     = var.internal_ip == "" ? "ClusterIP" : "LoadBalancer"
        ports    = [{ name = "http", port = local.port, targetPort = "http", protocol = "TCP" }]
      },
      # An internal address reserved by envs/cloud-platform: edges in other clusters reach it there.
      { for k, v in { loadBalancerIP = var.internal_ip } : k => v if var.internal_ip != "" },
    )
  }

  # Only edges (this cluster's pods, or other clusters' ranges through the internal load balancer)
  # and the metrics scraper reach a region pod; the kubelet's probes come from the node and are not
  # subject to the policy. Tokens are still checked: the policy is the second wall, not the first.
  network_policy = {
    apiVersion = "networking.k8s.io/v1"
    kind       = "NetworkPolicy"
    metadata   = local.metadata
    spec = {
      podSelector = { matchLabels = local.labels }
      policyTypes = ["Ingress"]
      ingress = [
        {
          from = concat(
            [{ namespaceSelector = {}, podSelector = { matchLabels = var.edge_pod_labels } }],
            [for cidr in var.edge_cidrs : { ipBlock = { cidr = cidr } }],
          )
          ports = [{ port = local.port, protocol = "TCP" }]
        },
        {
          # The scraper: the region's /metrics (with the credential) and vLLM's (it has no auth).
          from  = [{ namespaceSelector = { matchLabels = var.metrics_namespace_labels } }]
          ports = [{ port = local.port, protocol = "TCP" }, { port = local.llm_port, protocol = "TCP" }]
        },
      ]
    }
  }

  disruption_budget = {
    apiVersion = "policy/v1"
    kind       = "PodDisruptionBudget"
    metadata   = local.metadata
    spec = {
      maxUnavailable = 1 # node upgrades drain one pod at a time; the router fails turns over
      selector       = { matchLabels = local.labels }
    }
  }

  # Scaling follows the region's own queue (KEDA on Prometheus), never CPU.
  scaled_object = {
    apiVersion = "keda.sh/v1alpha1"
    kind       = "ScaledObject"
    metadata   = local.metadata
    spec = {
      scaleTargetRef  = { name = local.name }
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

  # prometheus-operator's scrape of the region pods, with the metrics credential from a Secret in
  # this namespace (never a region token: it reads GET /metrics and nothing else). With TLS, the
  # region's certificate is checked against ca.crt of the TLS Secret, for the Service's name.
  # vLLM beside it is scraped too (its own /metrics: tokens, queue). `tier` and `id` are the labels
  # the local Prometheus sets (the rules and the dashboard read them).
  relabel = {
    for tier in ["region", "llm"] : tier => [
      { action = "replace", targetLabel = "tier", replacement = tier },
      { action = "replace", targetLabel = "id", replacement = var.region_id },
    ]
  }
  pod_monitor = {
    apiVersion = "monitoring.coreos.com/v1"
    kind       = "PodMonitor"
    metadata   = local.metadata
    spec = {
      selector = { matchLabels = local.labels }
      podMetricsEndpoints = [merge(
        {
          port          = "http"
          path          = "/metrics"
          scheme        = local.url_scheme
          authorization = { type = "Bearer", credentials = { name = var.metrics_token_secret, key = "token" } }
          relabelings   = local.relabel.region
        },
        { for k, v in {
          tlsConfig = {
            ca         = { secret = { name = var.secrets.region_tls, key = "ca.crt" } }
            serverName = local.service_host
          }
        } : k => v if local.tls },
        ), {
        port        = "llm"
        path        = "/metrics"
        relabelings = local.relabel.llm
      }]
    }
  }
}
