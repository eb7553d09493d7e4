"""OpenTelemetry traces, set up the way every OpenTelemetry SDK is: from the standard ``OTEL_*`` variables.

One trace per turn crosses the tiers: the edge starts it, the router adds a span per region tried, the
region continues it from ``TurnStart.traceparent`` (the turn protocol), and vLLM from the HTTP
``traceparent`` header (docs/observability.md).

``OTEL_TRACES_EXPORTER``: ``otlp`` (OTLP over HTTP/protobuf to ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``), ``console`` or ``none``. Unset, it is ``otlp`` when an
endpoint is set and ``none`` otherwise. With ``none`` nothing is installed: opentelemetry-api's default
tracer hands out non-recording spans: tracing off costs a few function calls per span.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TypeVar

from opentelemetry import context, trace
from opentelemetry.trace import Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

T = TypeVar("T")

_propagator = TraceContextTextMapPropagator()
EXPORTERS = ("otlp", "console", "none")


class TracingSettingsError(ValueError):
    """An ``OTEL_*`` variable voicemesh cannot act on; the message names the fix."""


def traces_endpoint(env: Mapping[str, str] | None = None) -> str:
    """Where OTLP/HTTP traces go (``""``: nowhere), by the OTLP exporter's own rules."""
    env = os.environ if env is None else env
    if url := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""):
        return url
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    return f"{base.rstrip('/')}/v1/traces" if base else ""


def exporter_name(env: Mapping[str, str] | None = None) -> str:
    """``otlp``, ``console`` or ``none``; ``TracingSettingsError`` for anything else (or another protocol)."""
    env = os.environ if env is None else env
    name = env.get("OTEL_TRACES_EXPORTER", "").strip().lower() or ("otlp" if traces_endpoint(env) else "none")
    if name not in EXPORTERS:
        raise TracingSettingsError(f"OTEL_TRACES_EXPORTER={name!r}: set one of {', '.join(EXPORTERS)}")
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if name == "otlp" and protocol not in (None, "", "http/protobuf"):
        raise TracingSettingsError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: voicemesh exports http/protobuf only"
        )
    return name


def setup_tracing(service: str, **resource: str) -> bool:
    """Install a tracer provider for this process when an exporter is configured; whether one was.

    ``service`` is ``service.name`` unless ``OTEL_SERVICE_NAME`` says otherwise; ``resource`` adds
    attributes (e.g. ``service.instance.id``: the region's id). Spans are batched and flushed at exit.
    """
    name = exporter_name()
    if name == "none":
        return False
    # Imported only when tracing is on: the SDK and its exporter stay out of a process that does not trace.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    exporter: SpanExporter
    if name == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=traces_endpoint())
    attrs = {**resource, "service.name": os.environ.get("OTEL_SERVICE_NAME") or service}
    provider = TracerProvider(resource=Resource.create(attrs))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)  # flush what is batched when the process ends
    return True


def traceparent(span: Span) -> str | None:
    """``span``'s W3C ``traceparent`` (``None`` for a span that is not sampled and recorded)."""
    if not span.get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _propagator.inject(carrier, trace.set_span_in_context(span))
    return carrier.get("traceparent")


def remote_parent(header: str | None) -> context.Context | None:
    """The context a ``traceparent`` names, for a span continuing the caller's trace."""
    return _propagator.extract({"traceparent": header}) if header else None


async def within(span: Span, events: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    """``events`` read with ``span`` current (so what they start and log is in its trace); ends ``span``.

    The span is made current only around each step, never across a ``yield``: a context attached in
    an async generator and detached after it resumed in another task would be refused.
    """
    ctx = trace.set_span_in_context(span)
    try:
        while True:
            token = context.attach(ctx)
            try:
                ev = await anext(events)
            except StopAsyncIteration:
                return
            finally:
                context.detach(token)
            yield ev
    finally:
        token = context.attach(ctx)
        try:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            context.detach(token)
            span.end()
