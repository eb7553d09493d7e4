"""The router's spans in a turn's trace (``wire/tracing.py``): the turn, one per region tried, the failovers.

``router.turn`` spans the whole turn; each ``router.attempt`` names its region and why it was left
(``voicemesh.attempt.outcome``: ``completed``, a region error's code, ``client_refused``, ``abandoned``)
and hands its context to the region in ``TurnStart.traceparent``; ``router.failover`` runs from a
region's failure to the choice of the next, with the length of what the user had heard by then.
"""

from __future__ import annotations

import time

import msgspec
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from wire.errors import RegionError
from wire.tracing import traceparent
from wire.turn import TurnStart

tracer = trace.get_tracer("voicemesh.router")


def turn_span(start: TurnStart, session_id: str) -> Span:
    return tracer.start_span(
        "router.turn",
        attributes={"voicemesh.turn.id": start.turn_id, "voicemesh.session.id": session_id},
    )


def attempt_span(region: str, attempt: int, start: TurnStart) -> tuple[Span, TurnStart]:
    """A try of ``region`` (a client span: it calls the region), and the turn it sends with its context."""
    span = tracer.start_span(
        "router.attempt",
        kind=SpanKind.CLIENT,
        attributes={
            "voicemesh.region": region,
            "voicemesh.attempt": attempt,
            "rpc.system": "voicemesh.turn",
            "rpc.method": "turn.start",
        },
    )
    parent = traceparent(span)
    return span, (msgspec.structs.replace(start, traceparent=parent) if parent else start)


def left(span: Span, outcome: str, exc: BaseException | None = None) -> None:
    """End an attempt's span with why the turn left its region."""
    span.set_attribute("voicemesh.attempt.outcome", outcome)
    if isinstance(exc, RegionError):
        span.set_attribute("error.type", exc.code)
        span.set_status(Status(StatusCode.ERROR, exc.message))
    span.end()


def failover(exc: RegionError, to_region: str, heard_text: str, failed_at: float) -> None:
    """A span from a region's failure (``failed_at``, perf_counter) to the choice of the next region."""
    if not trace.get_current_span().is_recording():
        return
    began = time.time_ns() - int((time.perf_counter() - failed_at) * 1e9)
    span = tracer.start_span(
        "router.failover",
        start_time=began,
        attributes={
            "voicemesh.failover.from": exc.region,
            "voicemesh.failover.to": to_region,
            "voicemesh.failover.reason": exc.code,
            "voicemesh.heard_text.length": len(heard_text),
        },
    )
    span.end()
