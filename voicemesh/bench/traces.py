"""``voicemesh bench traces``: what tracing costs a caller's time to first audio, off and on side by side.

One run, one region (in this process, its own vLLM unless ``--llm-url``), the real router: spoken turns
alternate between tracing off (opentelemetry-api's no-op tracer, as with no ``OTEL_*`` set) and on (the
SDK batching every span of the edge's turn, the router and the region to an OTLP/HTTP sink on loopback),
in ABBA order so drift on a busy machine falls on both. The switch is a tracer provider that hands each
span to the SDK or to the no-op tracer (``_Switch``): the same process, models and warm connections.
vLLM's own tracing is set when it starts, not per turn, so it stays out of the comparison (it traces a
finished request once, in its output processor).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import msgspec
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.util.types import AnyValue

from edge.shared.tracing import traced_turn
from region.settings import RegionSettings
from router.api import SessionRouting
from router.core import Router
from router.registry import RegionRecord, Registry
from router.settings import RouterSettings
from voicemesh.bench.region import BenchOptions, bench_region_node, espeak_utterance
from voicemesh.processes import free_port
from wire.audio import float_to_pcm16
from wire.client import ClauseAudio
from wire.errors import VoicemeshError
from wire.turn import TurnStart

Report = Callable[[str], None]


class _Sink:
    """A loopback OTLP/HTTP endpoint that accepts and counts every export (a collector's cost is not ours)."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                sink.bytes += len(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                sink.requests += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        threading.Thread(target=self.server.serve_forever, name="otlp-sink", daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"


class _Switch(trace.TracerProvider):
    """Tracers that start each span on the SDK's tracer while ``on``, on the no-op tracer otherwise."""

    def __init__(self, sdk: TracerProvider) -> None:
        self.on = False
        self.sdk = sdk

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Mapping[str, AnyValue] | None = None,
    ) -> trace.Tracer:
        on = self.sdk.get_tracer(
            instrumenting_module_name, instrumenting_library_version, schema_url, attributes
        )
        return _Switched(self, on, trace.NoOpTracer())


class _Switched(trace.Tracer):
    def __init__(self, switch: _Switch, on: trace.Tracer, off: trace.Tracer) -> None:
        self._switch, self._on, self._off = switch, on, off

    def _now(self) -> trace.Tracer:
        return self._on if self._switch.on else self._off

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._now().start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Iterator[trace.Span]:  # type: ignore[override]
        return self._now().start_as_current_span(*args, **kwargs)  # type: ignore[return-value]


async def _ttfa(router: Router, start: TurnStart, pcm: bytes) -> float:
    """One spoken turn through the edge's turn span and the router: seconds to its first audio."""
    t0 = time.perf_counter()
    first: float | None = None
    _, events = traced_turn("realtime", start, lambda: router.run_turn(SessionRouting("bench"), start, pcm))
    async for ev in events:
        if isinstance(ev, ClauseAudio) and first is None:
            first = time.perf_counter() - t0
    if first is None:
        raise VoicemeshError(f"bench turn {start.turn_id} gave no audio")
    return first


def summary(off: Sequence[float], on: Sequence[float], sink_requests: int, sink_bytes: int) -> str:
    p_off, p_on = statistics.median(off), statistics.median(on)
    mean_off, mean_on = statistics.fmean(off), statistics.fmean(on)
    return "\n".join([
        "| tracing | turns | TTFA p50 (s) | TTFA mean (s) |",
        "|---|---|---|---|",
        f"| off (no-op tracer) | {len(off)} | {p_off:.3f} | {mean_off:.3f} |",
        f"| on (OTLP/HTTP to loopback) | {len(on)} | {p_on:.3f} | {mean_on:.3f} |",
        "",
        f"on/off ratio, p50 TTFA: {p_on / p_off:.3f}; mean: {mean_on / mean_off:.3f}",
        f"exported: {sink_requests} OTLP requests, {sink_bytes / 1024:.1f} KiB",
    ])  # fmt: skip


async def bench_traces(settings: RegionSettings, *, rounds: int, utterance: str, report: Report) -> str:
    sink = _Sink()
    sdk = TracerProvider(resource=Resource.create({"service.name": "voicemesh-bench"}))
    sdk.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=sink.endpoint)))
    switch = _Switch(sdk)
    trace.set_tracer_provider(switch)  # before any tier's tracer is first used
    pcm = float_to_pcm16(espeak_utterance(utterance))
    options = BenchOptions(max_output_tokens=60)
    times: dict[bool, list[float]] = {False: [], True: []}
    try:
        async with bench_region_node(options, settings, report) as (base, _node):
            registry = Registry(regions=[RegionRecord(id="bench", url=base)])
            async with Router(RouterSettings(probe_interval_s=0), registry=registry) as router:
                start = TurnStart(turn_id="warm", max_output_tokens=60, temperature=0.0)
                report("warm-up turn")
                await _ttfa(router, start, pcm)
                for i in range(rounds):
                    for on in (False, True, True, False) if i % 2 == 0 else (True, False, False, True):
                        switch.on = on
                        turn = msgspec.structs.replace(start, turn_id=f"bench-{i}-{len(times[on])}-{on}")
                        times[on].append(await _ttfa(router, turn, pcm))
                        report(
                            f"round {i + 1}/{rounds}: tracing {'on ' if on else 'off'} {times[on][-1]:.3f} s"
                        )
    finally:
        sdk.shutdown()  # flush: the sink's count is every span of the "on" turns
        sink.server.shutdown()
    return summary(times[False], times[True], sink.requests, sink.bytes)
