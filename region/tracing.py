"""The region's spans in a turn's trace (``wire/tracing.py``): the turn, its stages, the LLM call.

``region.turn`` (a server span) continues the router's attempt from ``TurnStart.traceparent``; its
stages are the timings ``Turn.mark`` takes (``stt_s``, ``llm_ttft_s``, ``first_clause_s``,
``tts_first_audio_s``, ...), added as span events when they happen; ``region.queue`` is the wait for
a slot; ``chat {model}`` (GenAI conventions) is each request to vLLM, whose own ``llm_request`` span
is its child through the HTTP ``traceparent`` header.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from wire.tracing import remote_parent, traceparent
from wire.turn import TurnStart

tracer = trace.get_tracer("voicemesh.region")


def turn_span(start: TurnStart, region: str) -> AbstractContextManager[Span]:
    """The turn's span, current while it runs: the router's attempt is its parent."""
    return tracer.start_as_current_span(
        "region.turn",
        context=remote_parent(start.traceparent),
        kind=SpanKind.SERVER,
        attributes={
            "voicemesh.region": region,
            "voicemesh.turn.id": start.turn_id,
            "rpc.system": "voicemesh.turn",
            "rpc.method": "turn.start",
        },
    )


def queued(queued_s: float) -> None:
    """The turn's wait for a slot, now over: a span of that length ending now."""
    if trace.get_current_span().is_recording():
        now = time.time_ns()
        tracer.start_span("region.queue", start_time=now - int(queued_s * 1e9)).end(end_time=now)


def llm_span(model: str) -> tuple[Span, dict[str, str]]:
    """A span for one chat request to vLLM, and the headers that make vLLM's spans its children."""
    span = tracer.start_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.system": "vllm",
        },
    )
    parent = traceparent(span)
    return span, ({"traceparent": parent} if parent else {})
