"""When a turn's caller runs out of audio, and how long the region takes to synthesise a clause.

The region sends each clause's audio as soon as it is made, and the caller plays clauses back to
back from their arrival. So the caller's buffer runs dry at ``dry_at``: the end of the audio sent so
far at playback pace (``Playout``). A later clause must *start* synthesising by ``dry_at`` minus its
expected synthesis time, or the caller hears a gap in the middle of the answer; that start-by time
is what ``region.cpu_order`` schedules later clauses by.

The expected synthesis time is the region's own measured rate (``SynthRate``: seconds of Kokoro per
character of clause, a time-decayed average of its recent runs, as the router keeps per region in
``router.health``), so it follows the load: beside decoding or other callers, a clause takes longer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from wire.client import ClauseAudio
from wire.rates import DecayingEwma

_MIN_CHARS = 8
"""A clause's fixed cost (a run, phonemizing) shows as a high per-character rate on a very short one:
count at least this many characters."""


@dataclass
class SynthRate:
    """Seconds of synthesis per character, measured on the region's runs."""

    prior_s_per_char: float = 0.08
    """Before any run is measured (Kokoro int8 on one core of the 2-core box, a clause alone)."""
    tau_s: float = 30.0
    _ewma: DecayingEwma = field(init=False)

    def __post_init__(self) -> None:
        self._ewma = DecayingEwma(self.tau_s)

    def update(self, chars: int, seconds: float, now: float | None = None) -> None:
        self._ewma.update(seconds / max(chars, _MIN_CHARS), now)

    def expected_s(self, text: str) -> float:
        rate = self._ewma.value
        return (self.prior_s_per_char if rate is None else rate) * max(len(text), _MIN_CHARS)


@dataclass
class Playout:
    """One turn's audio as its caller plays it: back to back from each clause's arrival."""

    dry_at: float | None = None
    """Monotonic time the audio sent so far has been played; ``None`` before the first audio."""

    def sent(self, audio_s: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.dry_at = max(now, self.dry_at or now) + audio_s

    def first_hold_s(self, first: ClauseAudio, rate: SynthRate, max_hold_s: float) -> float:
        """How long to hold an answer's first audio so the next clause can follow it without a gap:
        the next clause (about twice the first's text, as the chunker's schedule grows) is expected
        to take longer than the first's audio plays. At most ``max_hold_s``: time to first audio
        is not given away beyond that (0: never held)."""
        next_s = rate.expected_s(first.clause.text * 2)
        return min(max_hold_s, max(0.0, next_s - audio_s(first)))

    def start_by(self, expected_s: float) -> float | None:
        """When the next clause must start synthesising for its audio to follow without a gap
        (``None`` before the first audio: the caller is waiting for a first word, not a next one)."""
        return None if self.dry_at is None else self.dry_at - expected_s


def audio_s(clause: ClauseAudio) -> float:
    """Seconds of a clause's audio (PCM16 at its sample rate)."""
    return clause.clause.audio_bytes / 2 / clause.clause.sample_rate
