# A node's model cache, as plain data: a DaemonSet that fills the node-local model directory once
# (idempotent, sha256-checked against the mirror's manifest: `voicemesh models fetch`), then idles,
# so pods scheduled on that node start without downloading anything. region-k8s (the GPU pool) and
# edge-k8s (the CPU pool) each have one.

locals {
  selector = { "voicemesh.io/model-cache" = var.name }
}

module "cache" {
  source = "../k8s-common"
  image  = var.image
  containers = {
    fetch = { process = var.workload, values = { "{model_source}" = var.model_source }, writes_models = true }
  }
  secrets          = var.secrets
  model_cache_path = var.model_cache_path
  model_cache_type = "DirectoryOrCreate"
}

locals {
  daemon_set = {
    apiVersion = "apps/v1"
    kind       = "DaemonSet"
    metadata   = { name = "${var.name}-model-cache", namespace = var.namespace, labels = var.labels }
    spec = {
      selector = { matchLabels = local.selector }
      template = {
        metadata = { labels = local.selector }
        spec = {
          nodeSelector    = var.node_selector
          tolerations     = var.tolerations
          securityContext = module.cache.pod_security
          initContainers = [
            {
              # hostPath directories are created root-owned: hand this one to the image's user.
              name            = "own"
              image           = var.image
              command         = ["chown", "10001:10001", module.cache.containers.fetch.volumeMounts[0].mountPath]
              securityContext = { runAsUser = 0, runAsNonRoot = false, allowPrivilegeEscalation = false, capabilities = { drop = ["ALL"], add = ["CHOWN"] } }
              volumeMounts    = module.cache.containers.fetch.volumeMounts
            },
            module.cache.containers.fetch,
          ]
          containers = [{
            name      = "idle"
            image     = var.image
            command   = ["sleep", "infinity"]
            resources = { requests = { cpu = "10m", memory = "16Mi" } }
          }]
          volumes = module.cache.volumes
        }
      }
    }
  }
}
