# One cluster's CRDs and their controllers (stage 1), at pinned chart versions, plus the front
# door's Google-managed certificate (GKE ships its CRD). Stage 2's objects need all of these.

resource "helm_release" "keda" {
  name             = "keda"
  repository       = "https://kedacore.github.io/charts"
  chart            = "keda"
  version          = var.versions.keda
  namespace        = "keda"
  create_namespace = true
}

resource "helm_release" "prometheus_crds" {
  name             = "prometheus-operator-crds"
  repository       = "https://prometheus-community.github.io/helm-charts"
  chart            = "prometheus-operator-crds"
  version          = var.versions.prometheus_crds
  namespace        = "monitoring"
  create_namespace = true
}

# The operator and a Prometheus that reads PodMonitors in every namespace (KEDA queries it at
# prometheus-operated.monitoring:9090); CRDs from the release above, not this chart.
resource "helm_release" "kube_prometheus_stack" {
  name       = "kube-prometheus-stack"
  repository = "https://prometheus-community.github.io/helm-charts"
  chart      = "kube-prometheus-stack"
  version    = var.versions.kube_prometheus_stack
  namespace  = "monitoring"
  skip_crds  = true
  values = [yamlencode({
    crds       = { enabled = false }
    grafana    = { enabled = false }
    prometheus = { prometheusSpec = { podMonitorSelectorNilUsesHelmValues = false, ruleSelectorNilUsesHelmValues = false } }
  })]
  depends_on = [helm_release.prometheus_crds]
}

resource "kubernetes_manifest" "managed_certificate" {
  manifest = {
    apiVersion = "networking.gke.io/v1"
    kind       = "ManagedCertificate"
    metadata   = { name = var.managed_certificate.name, namespace = "voicemesh" }
    spec       = { domains = [var.managed_certificate.domain] }
  }
  depends_on = [kubernetes_namespace_v1.voicemesh]
}

# Created here because the certificate lives in it; stage 2 renders the same Namespace (so it is
# validated with the rest) but leaves it to this stage.
resource "kubernetes_namespace_v1" "voicemesh" {
  metadata {
    name   = "voicemesh"
    labels = { "app.kubernetes.io/part-of" = "voicemesh" }
  }
}
