"""Prometheus metrics of one region node, on its own registry (several nodes can share a process)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from region.admission import Admission
from region.live_first import LiveFirst

# Seconds; dense below 1 s where voice latency is won or lost.
_BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 30.0)

# turn.done timing name -> histogram (name, help)
STAGE_HISTOGRAMS = {
    "stt_s": ("voicemesh_region_stt_seconds", "Speech-to-text time of a turn"),
    "llm_ttft_s": ("voicemesh_region_llm_ttft_seconds", "LLM time to first token"),
    "first_clause_s": ("voicemesh_region_first_clause_seconds", "Turn start to the first complete clause"),
    "tts_first_audio_s": ("voicemesh_region_tts_first_audio_seconds", "TTS time to the first clause's audio"),
    "llm_held_s": (
        "voicemesh_region_llm_held_seconds",
        "Decoding held while the first clause was synthesised",
    ),
    "first_audio_s": ("voicemesh_region_turn_first_audio_seconds", "Turn start to the first audio sent"),
    "total_s": ("voicemesh_region_turn_seconds", "Whole turn, admission to turn.done"),
    "queued_s": ("voicemesh_region_queued_seconds", "Time a turn waited for a slot"),
}


class _Preemptions(Collector):
    """``voicemesh_region_batch_preemptions_total``: the gate's own count, exported as a counter."""

    def __init__(self, gate: LiveFirst) -> None:
        self._gate = gate

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(
            "voicemesh_region_batch_preemptions",
            "Batch clauses stopped mid-synthesis by a live turn (said again after it), since start",
            value=self._gate.preemptions,
        )


class RegionMetrics:
    def __init__(self, region: str, admission: Admission) -> None:
        self.registry = CollectorRegistry()
        self.stages = {
            key: Histogram(name, help_, registry=self.registry, buckets=_BUCKETS)
            for key, (name, help_) in STAGE_HISTOGRAMS.items()
        }
        self.turns = Counter(
            "voicemesh_region_turns", "Turns finished, by status", ["status"], registry=self.registry
        )
        self.cancels = Counter(
            "voicemesh_region_cancels", "Turns cancelled by the edge", registry=self.registry
        )
        self.rejections = Counter(
            "voicemesh_region_rejections",
            "Turns refused because slots and queue were full",
            registry=self.registry,
        )
        self.errors = Counter(
            "voicemesh_region_request_errors", "Requests answered with an error event, by code", ["code"],
            registry=self.registry,
        )  # fmt: skip
        active = Gauge("voicemesh_region_active_turns", "Turns holding a slot", registry=self.registry)
        active.set_function(lambda: admission.active)
        queued = Gauge("voicemesh_region_queued_turns", "Turns waiting for a slot", registry=self.registry)
        queued.set_function(lambda: admission.queued)
        Gauge("voicemesh_region_capacity", "Concurrent turn slots", registry=self.registry).set(
            admission.capacity
        )
        gate = admission.live_first
        batch = Gauge(
            "voicemesh_region_batch_turns", "Speech batch items being read aloud", registry=self.registry
        )
        batch.set_function(lambda: gate.batch)
        # A count since start: a counter (rate() works on it), read from the gate at scrape time.
        self.registry.register(_Preemptions(gate))
        ready = Gauge("voicemesh_region_info", "Region identity", ["region"], registry=self.registry)
        ready.labels(region=region).set(1)

    def observe_turn(self, status: str, timings: dict[str, float], *, batch: bool = False) -> None:
        """A finished turn; a batch item's timings (paused for live turns) stay out of the stage
        histograms, which describe what live callers wait for."""
        self.turns.labels(status=status).inc()
        if status == "cancelled":
            self.cancels.inc()
        if batch:
            return
        for key, value in timings.items():
            if hist := self.stages.get(key):
                hist.observe(value)

    def render(self) -> bytes:
        return generate_latest(self.registry)
