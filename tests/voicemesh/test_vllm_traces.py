"""vLLM is told where traces go only when tracing is on, in the terms vLLM reads (its flag, and the
protocol variable it alone looks at): the command and environment, without starting vLLM (the live
test, ``tests/edge/test_traces_live.py``, sees its spans arrive)."""

from __future__ import annotations

import pytest

from voicemesh import workloads
from voicemesh.llm_server import VllmServer, vllm_tracing
from voicemesh.profiles import cpu_profile


def test_with_an_otlp_endpoint_vllm_exports_over_http_to_its_traces_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    server = VllmServer(cpu_profile().llm, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"})
    cmd = server.command()
    assert cmd[cmd.index("--otlp-traces-endpoint") + 1] == "http://127.0.0.1:4318/v1/traces"
    env = server.env()
    assert env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"  # vLLM's default is gRPC
    assert env["OTEL_SERVICE_NAME"] == "vllm"


def test_without_an_exporter_vllm_is_not_told_to_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    server = VllmServer(cpu_profile().llm)
    assert "--otlp-traces-endpoint" not in server.command()
    assert "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" not in server.env()
    # An exporter set off wins over an endpoint.
    off = VllmServer(
        cpu_profile().llm, env={"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}
    )
    assert "--otlp-traces-endpoint" not in off.command()


def test_the_cloud_vllm_container_traces_by_the_rule_of_llm_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    """``voicemesh llm serve`` (here, from the inherited ``OTEL_*`` variables) and the cloud's vLLM
    container (from ``Settings.otlp_endpoint``) get the same flag and variables: both from
    ``vllm_tracing``, given the variables the deployment's other processes get."""
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    endpoint = "http://otel-collector.observability:4318"
    settings = workloads.Settings(profile="cpu", otlp_endpoint=endpoint)
    shared = workloads.workloads(workloads.k8s_layout(), settings)["region"]["env"]
    otel = {k: v for k, v in shared.items() if k.startswith("OTEL_")}
    local = VllmServer(cpu_profile().llm, env=otel)
    cloud = workloads.llm(workloads.k8s_layout(), settings)
    flag, variables = vllm_tracing(otel)
    assert flag == ["--otlp-traces-endpoint", f"{endpoint}/v1/traces"]
    assert local.command()[-2:] == list(cloud.argv[-2:]) == flag
    assert {k: local.env()[k] for k in variables} == {k: cloud.env[k] for k in variables} == variables
    assert variables == {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "vllm"}
