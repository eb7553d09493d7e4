"""One trace per turn, without models: the trace context crosses the turn protocol (router -> a scripted
region over a real loopback socket; ``turn.start`` -> a region's turn session), the router records why it
left a region, and with no exporter configured nothing is recorded at all.

Spans are read from an in-memory exporter on a tracer provider of the test's own, put in place of the
tiers' tracers (the process-wide provider is set once per process, so it is left alone here); the
OTLP/HTTP path end to end is ``tests/region/test_traces_live.py``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import region.tracing
import router.tracing
from region.testing import ScriptedLlm, run_frames, standin_node
from router.core import Router
from router.testing import ScriptedRegion, answer
from tests.router.conftest import FAR, NEAR
from tests.router.test_failover_loop import crashes_after, registry, run, settings
from wire.turn import TurnDone, TurnStart, encode

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(router.tracing, "tracer", provider.get_tracer("voicemesh.router"))
    monkeypatch.setattr(region.tracing, "tracer", provider.get_tracer("voicemesh.region"))
    yield exporter
    provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def trace_of(traceparent: str | None) -> str:
    assert traceparent is not None
    return traceparent.split("-")[1]


async def test_a_failover_keeps_one_trace_and_says_why_and_what_was_heard(
    spans: InMemorySpanExporter,
) -> None:
    async with (
        ScriptedRegion("victim", crashes_after("Paris is big.", "It has a river.")) as victim,
        ScriptedRegion("survivor", answer("It is old too.")) as survivor,
    ):
        async with Router(settings(), registry=registry((victim, NEAR), (survivor, FAR))) as r:
            await run(r, "s1", TurnStart(turn_id="t-trace", max_output_tokens=60))
    [turn] = named(spans, "router.turn")
    trace_id = f"{turn.context.trace_id:032x}"
    # Each region got the turn in the same trace, as a child of its own attempt's span.
    assert trace_of(victim.starts[0].traceparent) == trace_of(survivor.starts[0].traceparent) == trace_id
    attempts = {s.attributes["voicemesh.region"]: s for s in named(spans, "router.attempt")}
    assert set(attempts) == {"victim", "survivor"}
    assert all(s.parent is not None and s.parent.span_id == turn.context.span_id for s in attempts.values())
    assert attempts["survivor"].attributes["voicemesh.attempt.outcome"] == "completed"
    left = attempts["victim"].attributes
    assert left["voicemesh.attempt.outcome"] == left["error.type"] != "completed", left
    [failover] = named(spans, "router.failover")
    heard = survivor.starts[0].heard_text
    assert heard and failover.attributes["voicemesh.heard_text.length"] == len(heard)
    assert failover.attributes["voicemesh.failover.to"] == "survivor"


async def test_a_region_continues_the_trace_of_turn_start_with_its_stages(
    spans: InMemorySpanExporter,
) -> None:
    node = standin_node(llm=ScriptedLlm("Hello there. How are you?"))
    start = TurnStart(turn_id="t-region", text="Hi", traceparent=f"00-{TRACE_ID}-{PARENT}-01")
    await run_frames(node, [encode(start)], until=TurnDone)
    [turn] = named(spans, "region.turn")
    assert f"{turn.context.trace_id:032x}" == TRACE_ID
    assert turn.parent is not None and f"{turn.parent.span_id:016x}" == PARENT
    assert {"llm_ttft_s", "first_clause_s", "tts_first_audio_s"} <= {e.name for e in turn.events}
    [queue] = named(spans, "region.queue")
    assert queue.parent is not None and queue.parent.span_id == turn.context.span_id


def test_with_no_exporter_configured_nothing_is_recorded() -> None:
    """In a fresh process (the tracer provider is process-wide), the OTEL_* variables unset."""
    code = (
        "from wire.tracing import setup_tracing, traceparent\n"
        "from router.tracing import attempt_span\n"
        "from wire.turn import TurnStart\n"
        "assert setup_tracing('t') is False\n"
        "span, start = attempt_span('a', 1, TurnStart(turn_id='t'))\n"
        "assert not span.is_recording() and traceparent(span) is None and start.traceparent is None\n"
        "print('non-recording')\n"
    )
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0 and "non-recording" in out.stdout, out.stderr


def test_an_exporter_voicemesh_cannot_use_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from wire.tracing import TracingSettingsError, exporter_name

    with pytest.raises(TracingSettingsError, match="set one of otlp, console, none"):
        exporter_name({"OTEL_TRACES_EXPORTER": "jaeger"})
    with pytest.raises(TracingSettingsError, match="http/protobuf"):
        exporter_name({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert exporter_name({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318"}) == "otlp"
