"""A turn as a caller heard it, on the drill's clock: what every verdict and report is made of.

Times are seconds since the drill's start (``Clock``), so turns, faults and failovers share one axis.
``silences`` models a real-time player: the audible gap of a turn is the silence that player would
play mid-answer because audio came late, not the spacing of the deltas.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any


class Clock:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.t0 = time.monotonic()
        self.wall0 = time.time()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def from_wall(self, wall: float) -> float:
        """A wall-clock time (e.g. from the edge's /status) on the drill's axis."""
        return wall - self.wall0


@dataclass
class TurnRecord:
    caller: int
    turn: int
    """1-based within its caller."""
    session_id: str
    text: str
    voice: str
    speech_start: float
    speech_end: float = 0.0
    first_audio: float | None = None
    done: float | None = None
    regions: list[str] = field(default_factory=list)
    """Every region that served part of the turn, in order."""
    failovers: list[dict[str, Any]] = field(default_factory=list)
    degraded: bool = False
    degraded_reason: str = ""
    queued_position: int | None = None
    status: str = "in_progress"
    """``response.done`` status, or ``timeout`` / ``disconnected`` / ``not_started``."""
    audio_s: float = 0.0
    max_gap_s: float = 0.0
    """Longest silence a real-time player would have played mid-answer (its buffer ran dry)."""
    max_delta_gap_s: float = 0.0
    transcript: str = ""
    reply: str = ""
    error: str | None = None
    arrivals: list[tuple[float, float]] = field(default_factory=list, repr=False)
    """(arrival time, audio seconds) per output_audio.delta."""

    @property
    def region(self) -> str:
        return self.regions[-1] if self.regions else ""

    @property
    def failed_over(self) -> bool:
        return bool(self.failovers)

    @property
    def ttfa_s(self) -> float | None:
        return None if self.first_audio is None else self.first_audio - self.speech_end

    @property
    def complete(self) -> bool:
        """The caller heard a whole answer: completed, not cancelled, with audio."""
        return self.status == "completed" and self.audio_s > 0

    @property
    def barged_in(self) -> bool:
        """The caller spoke over the answer once it started (on purpose): heard, not lost."""
        return self.status == "barged_in"

    @property
    def lost(self) -> bool:
        return not self.complete and not self.barged_in

    @property
    def longest_silence_s(self) -> float:
        """The longest the caller heard nothing while waiting for or hearing the answer: the wait for
        its first audio (to its end when none came) or a silence mid-answer."""
        end = self.first_audio if self.first_audio is not None else self.done
        wait = end - self.speech_end if end is not None and self.speech_end else 0.0
        return max(wait, self.max_gap_s)

    def add_audio(self, at: float, seconds: float) -> None:
        if self.arrivals:
            self.max_delta_gap_s = max(self.max_delta_gap_s, at - self.arrivals[-1][0])
        self.arrivals.append((at, seconds))
        self.audio_s += seconds
        self.max_gap_s = audible_gap(self.arrivals)

    def add_region(self, region: str) -> None:
        if region and (not self.regions or self.regions[-1] != region):
            self.regions.append(region)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["arrivals"] = [[round(at, 3), round(seconds, 4)] for at, seconds in self.arrivals]
        data.update(
            region=self.region, failed_over=self.failed_over, ttfa_s=self.ttfa_s, complete=self.complete
        )
        return data


def record_from_json(data: dict[str, Any]) -> TurnRecord:
    """The inverse of ``TurnRecord.to_json`` (derived fields are recomputed, not read)."""
    names = {f.name for f in fields(TurnRecord)}
    rec = TurnRecord(**{k: v for k, v in data.items() if k in names and k != "arrivals"})
    rec.arrivals = [(float(at), float(seconds)) for at, seconds in data.get("arrivals", [])]
    return rec


def silences(arrivals: Sequence[tuple[float, float]]) -> tuple[list[tuple[float, float]], float]:
    """A player that starts at the first chunk and plays in real time: the (start, end) of every
    silence it plays mid-answer because audio came late, and when it finishes playing."""
    if not arrivals:
        return [], 0.0
    play_until = arrivals[0][0] + arrivals[0][1]
    gaps: list[tuple[float, float]] = []
    for at, seconds in arrivals[1:]:
        if at > play_until:
            gaps.append((play_until, at))
            play_until = at
        play_until += seconds
    return gaps, play_until


def audible_gap(arrivals: Sequence[tuple[float, float]]) -> float:
    """Longest silence a real-time player would play mid-answer because audio came late."""
    return max((end - start for start, end in silences(arrivals)[0]), default=0.0)


def playback_end(arrivals: Sequence[tuple[float, float]]) -> float:
    """When a real-time player would finish playing the answer (drill time)."""
    return silences(arrivals)[1]
