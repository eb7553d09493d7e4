"""The edge's span in a turn's trace (``wire/tracing.py``): the root, from the end of the user's turn
(or the audio API's request) to the end of its answer.

``edge.turn`` is current while the router serves the turn (the router's spans are its children) and
in the tasks that relay the answer (``task_context``), so a log line there finds the trace's id.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Literal, TypeVar

from opentelemetry import context, trace
from opentelemetry.trace import Span, SpanKind

from wire.tracing import within
from wire.turn import TurnStart

T = TypeVar("T")
Source = Literal["realtime", "speech", "transcription"]

tracer = trace.get_tracer("voicemesh.edge")


def traced_turn(
    source: Source, start: TurnStart, run: Callable[[], AsyncIterator[T]], *, speculative: bool = False
) -> tuple[Span, AsyncGenerator[T, None]]:
    """Start the turn's span, call ``run`` (the router's ``run_turn``) under it, and read its events
    with the span current; the span ends when the stream does. ``speculative``: started at a pause
    (``edge/realtime/speculation.py``)."""
    span = tracer.start_span(
        "edge.turn",
        kind=SpanKind.SERVER,
        attributes={
            "voicemesh.turn.id": start.turn_id,
            "voicemesh.turn.source": source,
            "voicemesh.turn.speculative": speculative,
        },
    )
    with trace.use_span(span, end_on_exit=False):
        events = run()
    return span, within(span, events)


def task_context(span: Span) -> contextvars.Context:
    """A context for ``asyncio.create_task(..., context=)``: the task runs with ``span`` current."""
    token = context.attach(trace.set_span_in_context(span))
    try:
        return contextvars.copy_context()
    finally:
        context.detach(token)
