"""Every Kubernetes object the cloud path creates, rendered by the real Terraform (envs/k8s-render, no
provider, no credentials) for both profiles, and validated against the API schemas of a pinned
Kubernetes version and the CRDs' own schemas (infra/manifests.py). No cluster runs here: what a
cluster would accept is checked by its schemas, nothing more (admission webhooks, quotas and the
cloud's own checks are not)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.manifests import K8S_VERSION, describe, problems, validate_all
from infra.observability import RULES_DIR
from infra.render import render_k8s
from infra.tooling import Toolchain
from voicemesh import workloads
from voicemesh.models.catalog import VLLM_IMAGES, VLLM_VERSION

Objects = dict[str, list[dict[str, Any]]]
OTLP_ENDPOINT = "http://otel-collector.observability:4318"


@pytest.fixture(scope="module")
def rendered(terraform: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Objects]:
    """Variant -> region id -> that cluster's objects. Variants: each profile, and the gpu profile with
    every optional part on (regions serving TLS, edges checking them with a CA, the front door's
    certificate from a Secret), and the gpu profile traced (an OTLP endpoint)."""
    variants = {
        "cpu": (workloads.Settings(profile="cpu", max_concurrent=8, max_queue=16), {}),
        "gpu": (workloads.Settings(profile="gpu", max_concurrent=8, max_queue=16), {}),
        "gpu-tls": (
            workloads.Settings(profile="gpu", region_tls=True, region_ca=True),
            {"edge_tls_secret": "voicemesh-edge-tls"},
        ),
        "gpu-traced": (
            workloads.Settings(profile="gpu", max_concurrent=8, max_queue=16, otlp_endpoint=OTLP_ENDPOINT),
            {},
        ),
    }
    out = {}
    for name, (settings, extra) in variants.items():
        tfvars = {**workloads.k8s_tfvars(settings), **extra}
        out[name] = render_k8s(terraform, tfvars, tmp_path_factory.mktemp(f"render-{name}"))
    return out


def _all(objects: Objects) -> list[dict[str, Any]]:
    return [obj for items in objects.values() for obj in items]


def _find(objects: Objects, kind: str, name: str, region: str = "eu-west") -> dict[str, Any]:
    return next(o for o in objects[region] if o["kind"] == kind and o["metadata"]["name"] == name)


@pytest.mark.parametrize("variant", ["cpu", "gpu", "gpu-tls", "gpu-traced"])
def test_every_rendered_object_is_accepted_by_its_schema(rendered: dict[str, Objects], variant: str) -> None:
    objects = _all(rendered[variant])
    kinds = {o["kind"] for o in objects}
    # Everything the cloud creates, CRD-based objects included.
    assert kinds >= {
        "Namespace", "ConfigMap", "DaemonSet", "Deployment", "Service", "NetworkPolicy",
        "PodDisruptionBudget", "HorizontalPodAutoscaler", "Ingress",
        "ScaledObject", "PodMonitor", "BackendConfig", "PrometheusRule",
    }  # fmt: skip
    assert validate_all(objects) == [], f"rejected by Kubernetes {K8S_VERSION} or a CRD schema"


def test_every_placeholder_is_filled_and_tls_parts_appear_only_when_asked(
    rendered: dict[str, Objects],
) -> None:
    for variant, objects in rendered.items():
        text = json.dumps(objects)
        assert not [p for p in workloads.PLACEHOLDERS if p in text], variant
    region = {
        v: _find(rendered[v], "Deployment", "region-eu-west")["spec"]["template"]["spec"]
        for v in ("gpu", "gpu-tls")
    }
    assert "--tls-cert" not in region["gpu"]["containers"][1]["command"]
    assert "--tls-cert" in region["gpu-tls"]["containers"][1]["command"]
    assert region["gpu-tls"]["containers"][1]["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    monitor = _find(rendered["gpu-tls"], "PodMonitor", "region-eu-west")["spec"]["podMetricsEndpoints"][0]
    assert monitor["scheme"] == "https" and monitor["tlsConfig"]["serverName"].startswith("region-eu-west.")
    ingress = _find(rendered["gpu-tls"], "Ingress", "edge")["spec"]
    assert ingress["tls"] == [{"hosts": ["eu.voice.example.com"], "secretName": "voicemesh-edge-tls"}]
    assert "tls" not in _find(rendered["gpu"], "Ingress", "edge")["spec"]


def test_a_broken_object_is_named_with_its_fault(rendered: dict[str, Objects]) -> None:
    deployment = copy.deepcopy(_find(rendered["gpu"], "Deployment", "region-eu-west"))
    deployment["spec"]["template"]["spec"]["containers"][1]["ports"][0]["containerPort"] = "9001"
    scaler = copy.deepcopy(_find(rendered["gpu"], "ScaledObject", "region-eu-west"))
    scaler["spec"]["maxReplicas"] = 4  # KEDA calls it maxReplicaCount
    monitor = copy.deepcopy(_find(rendered["gpu"], "PodMonitor", "region-eu-west"))
    del monitor["spec"]["selector"]
    backend = copy.deepcopy(_find(rendered["gpu"], "BackendConfig", "edge"))
    backend["spec"]["timeoutSec"] = "3600"
    ingress = copy.deepcopy(_find(rendered["gpu"], "Ingress", "edge"))
    ingress["spec"]["tlss"] = []

    found = validate_all([deployment, scaler, monitor, backend, ingress])
    expected = [
        ("Deployment voicemesh/region-eu-west: ", "containerPort"),
        ("ScaledObject voicemesh/region-eu-west: ", "maxReplicas"),
        ("PodMonitor voicemesh/region-eu-west: ", "selector"),
        ("BackendConfig voicemesh/edge: ", "timeoutSec"),
        ("Ingress voicemesh/edge: ", "tlss"),
    ]
    for (named, fault), line in zip(expected, found, strict=True):
        assert line.startswith(named) and fault in line, (named, fault, found)


def test_an_unknown_kind_is_refused_not_waved_through() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert problems(obj) == [
        f"no schema for example.com/v1 Widget in Kubernetes {K8S_VERSION} nor among the known CRDs"
    ]
    assert describe(obj) == "Widget w"


def test_each_cluster_starts_with_its_namespace_and_names_each_object_once(
    rendered: dict[str, Objects],
) -> None:
    """The workloads stage applies the Namespace first, then the rest (their CRDs were installed by
    the platform stage); the apply keys objects by kind and name, so both must be unique."""
    for region, items in rendered["gpu"].items():
        assert items[0]["kind"] == "Namespace", region
        keys = [(o["kind"], o["metadata"]["name"]) for o in items]
        assert len(keys) == len(set(keys)), f"{region}: an object twice"


def _container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in pod["containers"] if c["name"] == name)


def _pod_containers(objects: Objects) -> dict[str, dict[str, Any]]:
    """``<workload>/<container>`` -> container, of every Deployment and DaemonSet (init containers too)."""
    out = {}
    for obj in _all(objects):
        if obj["kind"] in ("Deployment", "DaemonSet"):
            pod = obj["spec"]["template"]["spec"]
            for c in [*pod.get("initContainers", []), *pod["containers"]]:
                out[f"{obj['metadata']['name']}/{c['name']}"] = c
    return out


def _otel_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if e["name"].startswith("OTEL_")}


def test_traced_containers_carry_exactly_the_otlp_settings_and_untraced_none(
    rendered: dict[str, Objects],
) -> None:
    """With an OTLP endpoint (schema-checked above as ``gpu-traced``): edges and regions get the
    standard variables and name their own service; vLLM its flag and the variables it reads. Without
    one, nothing in any container mentions OTLP."""
    traced = _pod_containers(rendered["gpu-traced"])
    protocol = "http/protobuf"
    voicemesh_otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": OTLP_ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
    vllm_otel = {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": protocol, "OTEL_SERVICE_NAME": "vllm"}
    seen = set()
    for key, container in traced.items():
        name = key.rsplit("/", 1)[1]
        expected = {"edge": voicemesh_otel, "region": voicemesh_otel, "llm": vllm_otel}.get(name, {})
        assert _otel_env(container) == expected, key
        flags = [a for a in container.get("command", []) if "otlp" in a]
        assert flags == (["--otlp-traces-endpoint"] if name == "llm" else []), key
        if name == "llm":
            cmd = container["command"]
            assert cmd[cmd.index("--otlp-traces-endpoint") + 1] == f"{OTLP_ENDPOINT}/v1/traces"
        seen.add(name)
    assert seen >= {"edge", "region", "llm"}, seen
    for key, container in _pod_containers(rendered["gpu"]).items():
        assert _otel_env(container) == {}, key
        assert not any("otlp" in a for a in container.get("command", [])), key


def test_no_model_is_pulled_from_a_hub_at_pod_start(rendered: dict[str, Objects]) -> None:
    """The models every pod reads are on the model volume, filled by the model-fetch init container
    from the bucket mirror (VOICEMESH_MODEL_SOURCE), never downloaded by the serving containers."""
    objects = rendered["gpu"]
    region = _find(objects, "Deployment", "region-eu-west")["spec"]["template"]["spec"]
    mounts = {c["name"]: {m["name"]: m for m in c["volumeMounts"]} for c in region["containers"]}
    for name in ("llm", "region"):
        assert mounts[name]["models"]["mountPath"] == f"{workloads.CONTAINER_HOME}/models"
        assert mounts[name]["models"]["readOnly"] is True
    region_env = {e["name"]: e["value"] for e in _container(region, "region")["env"]}
    assert region_env["VOICEMESH_HOME"] == workloads.CONTAINER_HOME
    # vLLM's own image of the project's vLLM version reads the weights from the volume, offline.
    llm = _container(region, "llm")
    assert llm["image"] == VLLM_IMAGES["gpu"] and llm["image"].endswith(f":v{VLLM_VERSION}")
    model = llm["command"][llm["command"].index("--model") + 1]
    assert model == f"{workloads.CONTAINER_HOME}/models/qwen3-8b"
    assert {e["name"]: e["value"] for e in llm["env"]}["HF_HUB_OFFLINE"] == "1"
    cache = _find(objects, "DaemonSet", "region-eu-west-model-cache")["spec"]["template"]["spec"]
    fetch = next(c for c in cache["initContainers"] if c["name"] == "fetch")
    assert fetch["command"] == ["voicemesh", "models", "fetch", "--profile", "gpu", "--no-runtime"]
    env = {e["name"]: e["value"] for e in fetch["env"]}
    assert env["VOICEMESH_MODEL_SOURCE"].startswith("https://")
    volumes = {v["name"]: v for v in cache["volumes"]}
    assert volumes["models"]["hostPath"]["path"] == "/var/lib/voicemesh/models"


def test_the_edge_front_door_is_tls_and_each_region_its_own_redis(rendered: dict[str, Objects]) -> None:
    objects = rendered["gpu"]
    for region in objects:
        service = _find(objects, "Service", "edge", region)
        assert service["spec"]["type"] == "ClusterIP"  # only the Ingress faces the internet
        ingress = _find(objects, "Ingress", "edge", region)
        assert ingress["metadata"]["annotations"]["kubernetes.io/ingress.allow-http"] == "false"
        assert ingress["metadata"]["annotations"]["networking.gke.io/managed-certificates"]
        assert _find(objects, "BackendConfig", "edge", region)["spec"]["timeoutSec"] >= 600  # WebSockets
    pods = {
        region: _find(objects, "Deployment", "edge", region)["spec"]["template"]["spec"] for region in objects
    }
    argv = {region: pod["containers"][0]["command"] for region, pod in pods.items()}
    redis = {region: a[a.index("--redis-url") + 1] for region, a in argv.items()}
    assert len(set(redis.values())) == len(redis), f"regions share a Redis: {redis}"
    for a in argv.values():
        assert a[a.index("--store-url") + 1] == a[a.index("--redis-url") + 1]
        assert a[a.index("--location") + 1] != "0,0"
        assert "--admin-keys-file" in a and "--api-keys-file" in a
        assert a[a.index("--profile") + 1] == "gpu"


def test_each_cluster_scrapes_edges_regions_and_vllm_and_carries_the_rules(
    rendered: dict[str, Objects],
) -> None:
    """The cloud twin of the local Prometheus: PodMonitors for edge, region and vLLM (with the metrics
    credential where the tier asks for it), the scraper let through to vLLM only, and the same rule
    groups as the files the local Prometheus loads (promtool checks those: test_prometheus_rules.py)."""
    objects = rendered["gpu"]
    rule = _find(objects, "PrometheusRule", "voicemesh")
    files = sorted(RULES_DIR.glob("*.yml"))
    assert rule["spec"]["groups"] == [g for f in files for g in yaml.safe_load(f.read_text())["groups"]]
    region = _find(objects, "PodMonitor", "region-eu-west")["spec"]["podMetricsEndpoints"]
    by_port = {e["port"]: e for e in region}
    assert set(by_port) == {"http", "llm"} and "authorization" in by_port["http"]
    tiers = {
        p: [r["replacement"] for r in e["relabelings"] if r["targetLabel"] == "tier"]
        for p, e in by_port.items()
    }
    assert tiers == {"http": ["region"], "llm": ["llm"]}
    edge = _find(objects, "PodMonitor", "edge")["spec"]["podMetricsEndpoints"][0]
    assert edge["authorization"]["credentials"]["name"] == "voicemesh-region-metrics"
    pod = _find(objects, "Deployment", "region-eu-west")["spec"]["template"]["spec"]
    llm = next(c for c in pod["containers"] if c["name"] == "llm")
    assert llm["ports"] == [{"name": "llm", "containerPort": 8000}]
    assert llm["command"][llm["command"].index("--host") + 1] == "0.0.0.0"
    ingress = _find(objects, "NetworkPolicy", "region-eu-west")["spec"]["ingress"]
    reach = {p["port"]: r["from"] for r in ingress for p in r["ports"]}
    assert reach[8000] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]


def test_render_leaves_the_checkout_untouched(rendered: dict[str, Objects]) -> None:
    root = Path(__file__).resolve().parents[2] / "infra" / "envs" / "k8s-render"
    assert not (root / ".terraform").exists()
    assert not list(root.glob("*.tfstate"))


def test_the_gpu_profile_reads_every_model_from_the_model_volume(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the containers read, with the image's VOICEMESH_HOME: all on the volume the model-fetch
    init container fills (no hub id, no path outside it)."""
    from voicemesh.profiles import gpu_profile

    monkeypatch.setenv("VOICEMESH_HOME", workloads.CONTAINER_HOME)
    p = gpu_profile()
    volume = f"{workloads.CONTAINER_HOME}/models/"
    read = [p.llm.model, p.stt.model, p.tts.model, p.tts.voices, p.edge.piper_model, p.edge.vad_model]
    assert [m for m in read if not m.startswith(volume)] == []
