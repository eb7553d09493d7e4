"""vLLM is told where traces go only when tracing is on, in the terms vLLM reads (its flag, and the
protocol variable it alone looks at): the command and environment, without starting vLLM (the live
test, ``tests/edge/test_traces_live.py``, sees its spans arrive)."""

from __future__ import annotations

import pytest

from voicemesh.llm_server import VllmServer
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
