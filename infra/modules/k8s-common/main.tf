# Pieces every voicemesh pod shares, as plain data (no provider): a container from a
# voicemesh.workloads process, the volumes its mounts name, the pod's security context.
# Used by region-k8s and edge-k8s, so a process becomes a container in one way only.

locals {
  # The image runs as uid 10001 (VOICEMESH_HOME=/var/lib/voicemesh); Secret and ConfigMap files
  # are group-readable for that group (0440), nothing else.
  pod_security = {
    runAsNonRoot   = true
    runAsUser      = 10001
    runAsGroup     = 10001
    fsGroup        = 10001
    seccompProfile = { type = "RuntimeDefault" }
  }
  container_security = {
    allowPrivilegeEscalation = false
    readOnlyRootFilesystem   = false # vLLM and onnxruntime write caches under /tmp and the home
    capabilities             = { drop = ["ALL"] }
  }
  sources = {
    models        = { hostPath = { path = var.model_cache_path, type = var.model_cache_type } }
    "region-keys" = { secret = { secretName = var.secrets.region_keys, defaultMode = 288 } }
    "api-keys"    = { secret = { secretName = var.secrets.api_keys, defaultMode = 288 } }
    "admin-keys"  = { secret = { secretName = var.secrets.admin_keys, defaultMode = 288 } }
    tls           = { secret = { secretName = var.secrets.region_tls, defaultMode = 288 } }
    "region-ca"   = { secret = { secretName = var.secrets.region_ca, defaultMode = 292 } }
    registry      = { configMap = { name = var.registry_config_map } }
  }
  containers = {
    for name, c in var.containers : name => {
      name            = name
      image           = var.image
      imagePullPolicy = "IfNotPresent"
      command         = [for arg in c.process.argv : lookup(c.values, arg, arg)]
      env             = [for k in sort(keys(c.process.env)) : { name = k, value = lookup(c.values, c.process.env[k], c.process.env[k]) }]
      volumeMounts = [
        for m in sort(keys(c.process.mounts)) : { name = m, mountPath = c.process.mounts[m].mount_path, readOnly = !(m == "models" && c.writes_models) }
      ]
      securityContext = local.container_security
    }
  }
  mount_names = distinct(flatten([for c in var.containers : keys(c.process.mounts)]))
  volumes     = [for name in sort(local.mount_names) : merge({ name = name }, local.sources[name])]
}
