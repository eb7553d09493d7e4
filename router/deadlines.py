"""One attempt's deadline: which stage the region's answer is in, and how long it may stay silent.

Every sign of life moves the deadline: while the region transcribes, by its time to first audio;
once it speaks, by how long it takes to voice what is left. Each is derived from the region's own
latency (``RegionHealth``), stretched by ``slack`` when no other region is left. A failed health
probe of the region caps the deadline at a short confirmation after the last event heard
(``RegionHealth.hang_cutoff``), so a hung region is left early.

Bookkeeping over loop times: ``router.attempt`` reads the socket and asks ``due()``. The latencies
it hears go to ``learn`` (the health board's ``measured``); it writes no health itself.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from router import metrics
from router.health import RegionHealth
from router.health_board import Latency
from wire.client import ClauseAudio, RegionEvent
from wire.errors import FirstByteTimeout
from wire.turn import Transcript, TurnQueued


class Stage(enum.Enum):
    """What the attempt is waiting for (the value is the wording of the timeout message)."""

    FIRST_BYTE = "first byte"
    """Nothing heard from the region yet."""
    TRANSCRIPT = "transcript"
    """The region answered; its transcript (or first audio) has not arrived."""
    AUDIO = "the answer"
    """The transcript arrived; the answer's first audio (or, for a text-only turn, its text) has not."""
    SPEAKING = "progress after audio"
    """Audio is flowing: each silence is held to the stall deadline."""


class AttemptDeadline:
    """The deadline state machine of one region attempt."""

    def __init__(
        self, region: RegionHealth, *, started: float, slack: float = 1.0,
        hang_slack: float | None = None, learn: Callable[[Latency], None] | None = None,
    ) -> None:  # fmt: skip
        self.region = region
        self.slack = slack
        self.hang_slack = slack if hang_slack is None else hang_slack
        """``slack`` for the failed-probe cutoff (a batch item's silences are long by design, a
        region failing its probes is not)."""
        self.learn = learn
        """Where the region's latency measures go; ``None`` for a batch item, which waits for live
        turns (its latencies say nothing of the region's speed)."""
        self.started = started
        self.stage = Stage.FIRST_BYTE
        self.last_event = started
        self.last_audio = started
        self.deadline = started + slack * region.first_byte_deadline_s()

    def heard(self, ev: RegionEvent, now: float) -> None:
        """An event arrived at ``now``: advance the stage and feed the region's latency measures."""
        self.last_event = now
        if self.stage is Stage.FIRST_BYTE:
            if self.learn is not None:
                self.learn(Latency("first_byte", now - self.started))
            self.stage = Stage.TRANSCRIPT
        if isinstance(ev, ClauseAudio):
            if self.stage is not Stage.SPEAKING:
                self.stage = Stage.SPEAKING
                if self.learn is not None:
                    self.learn(Latency("first_audio", now - self.started))
                    metrics.TTFA.labels(self.region.id).observe(now - self.started)
            elif self.learn is not None:
                self.learn(Latency("clause_gap", now - self.last_audio, len(ev.clause.text)))
            self.last_audio = now
        elif isinstance(ev, Transcript):
            self.stage = Stage.AUDIO

    def rearm(self, ev: RegionEvent, now: float, pending_chars: int) -> None:
        """Move the deadline after ``ev`` (heard at ``now``); ``pending_chars`` of text await audio."""
        r, slack = self.region, self.slack
        if isinstance(ev, TurnQueued):
            self.deadline = now + ev.estimated_wait_s + slack * r.first_audio_deadline_s()
        elif self.stage is Stage.TRANSCRIPT:
            self.deadline = now + slack * r.first_audio_deadline_s()
        else:
            self.deadline = now + slack * r.stall_deadline_s(pending_chars)

    def due(self) -> float:
        """When to give up if nothing arrives: the deadline, or sooner once a probe has failed."""
        cutoff = self.region.hang_cutoff(self.last_event, self.hang_slack)
        return self.deadline if cutoff is None else min(self.deadline, cutoff)

    def expired(self, now: float) -> FirstByteTimeout:
        """The error that fails the attempt over when ``due()`` passed at ``now``."""
        why = " after a failed health probe" if self.region.probe_ok is False else ""
        return FirstByteTimeout(
            f"region {self.region.id}: silent for {now - self.last_event:.2f}s{why}"
            f" (waiting for {self.stage.value})",
            region=self.region.id,
        )
