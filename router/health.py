"""What the router believes about each region: latency, load, queue, recent failures.

Two sources feed it. Active probes poll every region's ``GET /health`` on a short interval (load,
queue depth, free slots, readiness, probe round trip). Passive measurements come from real turns:
time to first event and time to first audio. Before any measurement a region's latency is a prior
from its distance to this edge (``router.geo``), so the nearest region is tried first. The probes
themselves run in ``router.prober``.

A failed probe is also a signal to the turns waiting on the region (``hang_suspected``): each turn's
attempt watches it and decides for itself whether it, too, has heard nothing (``router.attempt``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import msgspec

from router.geo import distance_rtt_s
from router.registry import RegionRecord
from router.settings import RouterSettings
from wire.rates import DecayingCounter, DecayingEwma
from wire.redact import redact_url

_MIN_CLAUSE_CHARS = 12  # short clauses ("1.") still cost a synthesis call


class HealthReport(msgspec.Struct, kw_only=True):
    """The part of a region's ``/health`` body the router reads; other fields are ignored."""

    status: str = "ready"
    load: float = 0.0
    queue_depth: int = 0
    free_slots: int | None = None
    capacity: int | None = None
    estimated_turn_s: float | None = None
    """How long a turn holds a slot, by the region's own measure."""
    estimated_wait_s: float | None = None
    error: str = ""
    """Why a region that is not ready is not (its LLM does not answer, a model failed to load)."""

    @property
    def ready(self) -> bool:
        return self.status == "ready"


@dataclass(frozen=True, slots=True)
class Score:
    """A region's score (seconds, lower is better) and its parts, for ``status()``."""

    latency_s: float
    queue_wait_s: float
    penalty_s: float
    measured: bool

    @property
    def total_s(self) -> float:
        return self.latency_s + self.queue_wait_s + self.penalty_s


class RegionHealth:
    """Everything measured about one region."""

    def __init__(self, record: RegionRecord, settings: RouterSettings) -> None:
        self.record = record
        self._settings = settings
        tau = settings.latency_tau_s
        self.ttfa = DecayingEwma(tau)
        self.first_byte = DecayingEwma(tau)
        self.probe_rtt = DecayingEwma(tau)
        self.turn_duration = DecayingEwma(tau)
        self.synth_s_per_char = DecayingEwma(tau)
        """Seconds between two audio clauses per character of the later one: how long a healthy
        region goes quiet mid-answer depends on how much text it is voicing."""
        self.failures = DecayingCounter(settings.penalty_tau_s)
        self.report: HealthReport | None = None
        self.probe_ok: bool | None = None
        """``None`` until the first probe answers or fails."""
        self.probe_timed_out = False
        """The last probe failed for want of an answer in time (see ``hang_cutoff``)."""
        self.probe_timeouts = 0
        """Consecutive probes that got no answer in time (``probe_timeouts_to_suspect``)."""
        self.probe_error = ""
        self.last_probe_at = 0.0
        self.prior_s = settings.prior_ttfa_s + distance_rtt_s(settings.location, record.location)
        self.hang_suspected = asyncio.Event()
        """Set while the last probe failed: the quickest news of a hung region."""

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def reachable(self) -> bool:
        """Probes did not say otherwise: unprobed regions get the benefit of the doubt."""
        if self.probe_ok is False:
            return False
        return self.report is None or self.report.ready

    def score(self, now: float | None = None) -> Score:
        ttfa = self.ttfa.value
        latency = ttfa if ttfa is not None else self.prior_s
        return Score(
            latency_s=latency,
            queue_wait_s=self.expected_wait_s(),
            penalty_s=self._settings.failure_penalty_s * self.failures.value(now),
            measured=ttfa is not None,
        )

    def expected_wait_s(self) -> float:
        rep = self.report
        if rep is None:
            return 0.0
        if rep.estimated_wait_s is not None:
            return max(rep.estimated_wait_s, 0.0)
        if rep.free_slots is not None and rep.free_slots > 0:
            return 0.0
        per_turn = rep.estimated_turn_s or self.turn_duration.value or self._settings.turn_duration_prior_s
        slots = rep.capacity or self.record.capacity
        return (rep.queue_depth + (1 if rep.free_slots == 0 else 0)) * per_turn / max(slots, 1)

    # Deadlines derived from this region's own latency, so a hang is noticed in about the time a
    # healthy answer would have taken, not after one long generic timeout.
    def first_byte_deadline_s(self) -> float:
        s = self._settings
        fb = self.first_byte.value
        base = fb if fb is not None else self.probe_rtt.value or 0.0
        return max(s.first_byte_floor_s, s.first_byte_factor * base)

    def first_audio_deadline_s(self) -> float:
        s = self._settings
        ttfa = self.ttfa.value if self.ttfa.value is not None else self.prior_s
        return max(s.first_audio_floor_s, s.first_audio_factor * ttfa)

    def stall_deadline_s(self, pending_chars: int = 0) -> float:
        """Longest silence allowed mid-answer, given ``pending_chars`` of text still to be voiced."""
        s = self._settings
        rate = self.synth_s_per_char.value or s.synth_s_per_char_prior
        # The region voices one clause at a time: the next event is at most one clause away.
        chars = min(max(pending_chars, _MIN_CLAUSE_CHARS), s.max_clause_chars)
        return max(s.stall_floor_s, s.stall_factor * rate * chars)

    def connect_deadline_s(self, slack: float = 1.0) -> float:
        """A WebSocket handshake costs about one probe round trip; a stopped process never answers.
        ``slack`` (> 1 on the last region a turn may use: nowhere better to go) stretches it."""
        s = self._settings
        rtt = self.probe_rtt.value or 0.0
        return slack * min(s.connect_timeout_s, max(s.first_byte_floor_s, s.first_byte_factor * rtt))

    # Passive measurements from real turns.
    def observe_first_byte(self, seconds: float) -> None:
        self.first_byte.update(seconds)

    def observe_ttfa(self, seconds: float) -> None:
        self.ttfa.update(seconds)

    def observe_clause_gap(self, seconds: float, clause_chars: int) -> None:
        self.synth_s_per_char.update(seconds / max(clause_chars, _MIN_CLAUSE_CHARS))

    def observe_success(self, duration_s: float) -> None:
        self.turn_duration.update(duration_s)
        # A served turn proves the region is back; forgive its past quickly rather than in tau.
        self.failures.reset()

    def observe_failure(self) -> None:
        self.failures.add()

    def observe_probe(
        self, report: HealthReport | None, rtt_s: float, error: str = "", *, timed_out: bool = False
    ) -> None:
        """A probe's answer (``None``: it failed; ``timed_out``: no answer in time, as opposed to a
        refused connection or a bad answer)."""
        self.last_probe_at = time.monotonic()
        self.probe_timeouts = self.probe_timeouts + 1 if report is None and timed_out else 0
        if 0 < self.probe_timeouts < self._settings.probe_timeouts_to_suspect and self.probe_ok is not False:
            self.probe_error = error  # noted, not acted on: one late answer is a busy region's, usually
            return
        self.probe_ok = report is not None
        self.probe_error = error
        self.probe_timed_out = report is None and timed_out
        if report is not None:
            self.report = report
            self.probe_rtt.update(rtt_s)
            self.hang_suspected.clear()
        else:
            self.hang_suspected.set()

    def hang_cutoff(self, last_event: float, slack: float = 1.0) -> float | None:
        """After a failed probe, a turn that has heard nothing from this region since ``last_event``
        (loop time) need not sit out its whole deadline, only a short confirmation; ``None`` while
        probes are fine. A probe that only timed out may be a busy region, not a dead one: for the
        last region a turn may use (``slack`` > 1, ``last_resort_slack``) the confirmation is
        ``slack`` times longer, since leaving it means the edge's apology. A refused connection
        (the process is gone) is confirmed as fast as ever."""
        if self.probe_ok is not False:
            return None
        return last_event + self._settings.hang_confirm_s * (slack if self.probe_timed_out else 1.0)

    def status(self) -> dict[str, object]:
        sc = self.score()
        rep = self.report
        return {
            "id": self.id,
            "url": redact_url(self.record.url),
            "location": {"lat": self.record.location.lat, "lon": self.record.location.lon},
            "residency": list(self.record.residency),
            "capacity": self.record.capacity,
            "score_s": round(sc.total_s, 4),
            "score_parts": {
                "latency_s": round(sc.latency_s, 4),
                "latency_measured": sc.measured,
                "latency_prior_s": round(self.prior_s, 4),
                "queue_wait_s": round(sc.queue_wait_s, 4),
                "penalty_s": round(sc.penalty_s, 4),
            },
            "ttfa_ewma_s": _round(self.ttfa.value),
            "first_byte_ewma_s": _round(self.first_byte.value),
            "synth_s_per_char_ewma": _round(self.synth_s_per_char.value),
            "deadlines_s": {
                "first_byte": round(self.first_byte_deadline_s(), 3),
                "first_audio": round(self.first_audio_deadline_s(), 3),
                "stall": round(self.stall_deadline_s(), 3),
            },
            "probe_rtt_ewma_s": _round(self.probe_rtt.value),
            "probe_ok": self.probe_ok,
            "probe_error": self.probe_error,
            "ready": None if rep is None else rep.ready,
            "region_status": None if rep is None else rep.status,
            "region_error": None if rep is None else rep.error or None,
            "load": None if rep is None else rep.load,
            "queue_depth": None if rep is None else rep.queue_depth,
            "free_slots": None if rep is None else rep.free_slots,
        }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)
