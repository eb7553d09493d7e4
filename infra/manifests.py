"""Validate rendered Kubernetes objects offline: what a cluster's API server would accept.

* Built-in kinds: the API schemas of a pinned Kubernetes version, shipped inside the
  ``kubernetes-validate`` package (strict: an unknown field is an error, as with
  ``kubectl apply --validate=strict``).
* Custom resources: the CRDs' own schemas, as the ``cloudcoil-models-*`` packages generate them
  (pydantic models of KEDA's and prometheus-operator's CRDs, at the versions of the Helm charts
  envs/cloud-platform pins), installed by pip like any dependency rather than CRD files copied into
  the tree. Pydantic ignores unknown fields, so an object must also come back unchanged from the
  model (a misspelt field is dropped, a wrong type coerced: both reported).
* GKE's BackendConfig (no package carries its CRD): a schema of the fields used here, written from
  GKE's documented ``cloud.google.com/v1`` API (``_BACKEND_CONFIG``).

Needs the ``k8s`` extra (``pip install 'voicemesh[k8s]'``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

K8S_VERSION = "1.33"
"""The Kubernetes minor the objects must be valid for (GKE's REGULAR channel at the time of writing);
raise it with the cluster's."""

KEDA_CHART = "2.16.1"
"""KEDA's Helm chart version (envs/cloud-platform); its CRDs are cloudcoil-models-keda==2.16.1.0's."""
PROMETHEUS_OPERATOR_CRDS_CHART = "18.0.1"
"""prometheus-community/prometheus-operator-crds chart (envs/cloud-platform), operator v0.80.1;
its CRDs are cloudcoil-models-prometheus-operator==0.80.1.0's."""

_INT = {"type": "integer", "minimum": 0}
_BACKEND_CONFIG: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "cloud.google.com/v1"},
        "kind": {"const": "BackendConfig"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "timeoutSec": {"type": "integer", "minimum": 1, "maximum": 2147483647},
                "connectionDraining": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"drainingTimeoutSec": {"type": "integer", "minimum": 0, "maximum": 3600}},
                },
                "healthCheck": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "type": {"enum": ["HTTP", "HTTPS", "HTTP2"]},
                        "requestPath": {"type": "string", "pattern": "^/"},
                        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                        "checkIntervalSec": _INT,
                        "timeoutSec": _INT,
                        "healthyThreshold": _INT,
                        "unhealthyThreshold": _INT,
                    },
                },
            },
        },
    },
}


def _crd_models() -> dict[tuple[str, str], Any]:
    from cloudcoil.models.keda import v1alpha1 as keda
    from cloudcoil.models.prometheus_operator import v1 as monitoring

    return {
        ("keda.sh/v1alpha1", "ScaledObject"): keda.ScaledObject,
        ("monitoring.coreos.com/v1", "PodMonitor"): monitoring.PodMonitor,
        ("monitoring.coreos.com/v1", "PrometheusRule"): monitoring.PrometheusRule,
    }


def describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind', '?')} {where}{meta.get('name', '?')}"


def _changed(given: Any, back: Any, path: str = "") -> list[str]:
    """Where ``back`` (the model's dump) differs from ``given``: fields the schema does not know."""
    if isinstance(given, dict) and isinstance(back, dict):
        out = []
        for key in given:
            if key not in back:
                out.append(f"{path}.{key}: not a field of the CRD's schema")
            else:
                out += _changed(given[key], back[key], f"{path}.{key}")
        return out
    if isinstance(given, list) and isinstance(back, list) and len(given) == len(back):
        pairs = enumerate(zip(given, back, strict=True))
        return [d for i, (g, b) in pairs for d in _changed(g, b, f"{path}[{i}]")]
    return [] if given == back else [f"{path}: {given!r} is not of the schema's type (read as {back!r})"]


def problems(obj: Mapping[str, Any], version: str = K8S_VERSION) -> list[str]:
    """Why the API server would refuse ``obj`` (empty: it would accept it)."""
    import jsonschema
    import kubernetes_validate
    import pydantic

    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    models = _crd_models()
    if key in models:
        try:
            model = models[key].model_validate(obj)
        except pydantic.ValidationError as exc:
            return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        return _changed(dict(obj), model.model_dump(by_alias=True, exclude_unset=True, mode="json"))
    if key == ("cloud.google.com/v1", "BackendConfig"):
        validator = jsonschema.Draft7Validator(_BACKEND_CONFIG)
        return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]
    try:
        kubernetes_validate.validate(dict(obj), version, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {key[0]} {key[1]} in Kubernetes {version} nor among the known CRDs"]
    except kubernetes_validate.ValidationError as exc:
        # The first fault only (kubernetes-validate stops there); fix it and run again for the next.
        return [f"{'.'.join(str(p) for p in exc.absolute_path)}: {exc.message}"]
    return []


def validate_all(objects: Iterable[Mapping[str, Any]], version: str = K8S_VERSION) -> list[str]:
    """One line per problem, each naming its object (``Kind namespace/name: ...``)."""
    return [f"{describe(obj)}: {p}" for obj in objects for p in problems(obj, version)]
