"""The cloud path traces when a deployment names an OTLP endpoint, and only then: what the Kubernetes
modules get (the ``workloads`` variable, no Terraform), and ``voicemesh infra render``'s option. The
rendered, schema-checked objects: tests/infra/test_k8s_manifests.py (variant ``gpu-traced``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from voicemesh import workloads
from voicemesh.cli.infra import infra

ENDPOINT = "http://otel-collector.observability:4318"
VOICEMESH_OTEL = {"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
VLLM_OTEL = {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "vllm"}


def _otel(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("OTEL_")}


def _tfvars(**settings: Any) -> dict[str, dict[str, Any]]:
    return dict(workloads.k8s_tfvars(workloads.Settings(profile="gpu", **settings))["workloads"])


def test_with_an_endpoint_each_serving_container_gets_exactly_its_otel_settings() -> None:
    traced = _tfvars(otlp_endpoint=ENDPOINT)
    for name in ("edge", "region"):
        assert _otel(traced[name]["env"]) == VOICEMESH_OTEL, name  # the service name: each process's own
    assert _otel(traced["llm"]["env"]) == VLLM_OTEL
    argv = traced["llm"]["argv"]
    assert argv.count("--otlp-traces-endpoint") == 1
    assert argv[argv.index("--otlp-traces-endpoint") + 1] == f"{ENDPOINT}/v1/traces"
    for name in ("model_fetch", "edge_model_fetch"):  # nothing to trace
        assert _otel(traced[name]["env"]) == {}, name
    # Everything else is as without tracing.
    plain = _tfvars()
    for name, proc in plain.items():
        env = {k: v for k, v in traced[name]["env"].items() if not k.startswith("OTEL_")}
        assert env == proc["env"], name
    assert traced["llm"]["argv"][:-2] == plain["llm"]["argv"]


def test_without_an_endpoint_no_container_carries_an_otel_variable_or_flag() -> None:
    for name, proc in _tfvars().items():
        assert _otel(proc["env"]) == {}, name
        assert not any("otlp" in arg for arg in proc["argv"]), name


@pytest.mark.parametrize("bad", ["otel-collector:4318", "grpc://collector:4317", "http://"])
def test_an_endpoint_that_is_not_an_http_url_is_refused_with_the_fix(bad: str) -> None:
    with pytest.raises(ValueError, match="OTLP/HTTP base URL"):
        workloads.Settings(otlp_endpoint=bad)


def test_infra_render_takes_the_endpoint_and_refuses_a_bad_one(tmp_path: Path) -> None:
    out = tmp_path / "workloads.auto.tfvars.json"
    args = ["render", "--profile", "gpu", "--out", str(out)]
    result = CliRunner().invoke(infra, [*args, "--otlp-endpoint", ENDPOINT])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == workloads.k8s_tfvars(
        workloads.Settings(profile="gpu", max_concurrent=8, max_queue=16, otlp_endpoint=ENDPOINT)
    )
    refused = CliRunner().invoke(infra, [*args, "--otlp-endpoint", "collector:4318"])
    assert refused.exit_code == 2
    assert "OTLP/HTTP base URL" in refused.output
