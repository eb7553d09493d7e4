"""Where one response's time went: a mark as the turn passes each part of the edge and the router,
read back as contiguous stages (each from the previous mark to its own), so they add up to the
time to first audio; with the region's own stage timings (its ``turn.done``) beside them.

Stages, in order (docs/benchmarks.md "Where the time goes"):

=============  ==============================================================================
``eos``        end of speech -> ``speech_stopped``: the silence server VAD waits for, in audio
               time (the VAD's chunks), which is wall time for a client streaming in real time;
               for a turn started at a pause (``edge/realtime/speculation.py``), -> that start (the pause),
               and the rest of the window runs beside the next stages
``commit``     ``speech_stopped`` -> the turn handed to the router (commit, item, response opened);
               absent for a turn started at a pause
``route``      -> the router chose a region (``Routed``); after failovers before the first audio,
               the region that voiced it (the failed tries are in this stage)
``connect``    -> that region's ``turn.admitted``, less its queue wait: the connection (pooled or
               new) and the turn sent
``queue``      the region's wait for a slot (``turn.admitted``'s ``queued_s``)
``region``     -> the first clause's audio at the edge (STT, LLM, TTS and the way back; the text,
               for a text-only response)
``degrade``    -> the router gave up (``Degraded``) with no region audio yet
``relay``      -> the first ``response.output_audio.delta`` on the client's socket
``fallback``   the same, when the edge's own voice spoke first (a degraded turn)
=============  ==============================================================================

``first_audio`` is their sum: end of speech (or, for a typed turn, the turn handed to the router)
to the first audio delta sent. A stage whose mark was never reached is absent (a cancelled or
text-only response, a typed turn has no ``eos``/``commit``), and its time is in the next one.
The region's timings follow as ``region_<name>`` (``stt``, ``llm_ttft``, ``first_audio``, ...: the
finishing region's, which after a failover skipped STT).

The response's ``metadata`` carries them as one key, ``voicemesh_stages``: compact JSON of
milliseconds in that order (OpenAI's metadata values are strings of at most 512 characters).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any

from edge.shared.metrics import STAGE_SECONDS
from edge.shared.protocols import CHUNK_MS

METADATA_KEY = "voicemesh_stages"
MAX_METADATA_CHARS = 512
"""OpenAI's limit on one ``metadata`` value."""
EDGE_STAGES = (
    "eos", "commit", "route", "connect", "queue", "region", "degrade", "relay", "fallback", "first_audio",
)  # fmt: skip
"""Every ``stage`` label of ``voicemesh_edge_stage_seconds`` (a bounded set)."""


def silence_window_s(silence_duration_ms: int) -> float:
    """The audio server VAD hears after speech before it calls the end: ``silence_duration_ms``
    rounded up to its chunks (``edge/audio/turn_detector.py`` counts whole chunks)."""
    return math.ceil(silence_duration_ms / CHUNK_MS) * CHUNK_MS / 1000


class TurnStages:
    """The marks of one response, taken as it goes (perf_counter seconds); ``finish()`` reads them."""

    def __init__(self, sent_at: float | None = None) -> None:
        self.sent_at = time.perf_counter() if sent_at is None else sent_at
        """The turn was handed to the router: the start when no speech came before it."""
        self._start = self.sent_at
        self._marks: list[tuple[str, float]] = []
        self.region_audio = False
        """Region audio (a text-only response's text) reached the client's side of the edge."""
        self.first_audio: float | None = None
        self.region_timings: dict[str, float] = {}
        self.speech = False
        self._failovers: list[tuple[str, str, str, float]] = []

    def heard_speech(self, stopped_at: float, silence_s: float, *, sent_at: float | None = None) -> None:
        """A VAD turn: speech was called over at ``stopped_at``, ``silence_s`` of silence after it.
        ``sent_at``: the turn went to the router earlier, at a pause (``edge/realtime/speculation.py``);
        ``eos`` ends there, and there is no ``commit`` (it happened while the region worked)."""
        self.speech = True
        self._start = stopped_at - silence_s
        if sent_at is None:
            self._marks[:0] = [("eos", stopped_at), ("commit", self.sent_at)]
        else:
            self.sent_at = max(self._start, sent_at)  # (a client faster than real time: no negative eos)
            self._marks[:0] = [("eos", self.sent_at)]

    def routed(self, at: float) -> None:
        """The router chose a region; before any region audio a later choice (a failover) replaces
        the earlier one and what followed it."""
        if self.region_audio or self.first_audio is not None:
            return
        self._marks = [m for m in self._marks if m[0] in ("eos", "commit")]
        self._marks.append(("route", at))

    def failed_over(self, from_region: str, to_region: str, reason: str, at: float) -> None:
        """The router left ``from_region`` for ``to_region`` (the ops page marks it on the turn)."""
        self._failovers.append((from_region, to_region, reason, at))

    def failovers(self) -> list[dict[str, Any]]:
        """Each failover, ``at_ms`` from the stages' start (where ``eos`` begins)."""
        return [
            {"from": f, "to": t, "reason": r, "at_ms": round(1000 * (at - self._start), 1)}
            for f, t, r, at in self._failovers
        ]

    def admitted(self, at: float, queued_s: float) -> None:
        if self.region_audio or self.first_audio is not None or any(m[0] == "queue" for m in self._marks):
            return
        previous = self._marks[-1][1] if self._marks else self._start
        self._marks.append(("connect", max(previous, at - max(0.0, queued_s))))
        self._marks.append(("queue", at))

    def region_output(self, at: float) -> None:
        """The first clause's audio (a text-only response's first text) reached the edge."""
        if not self.region_audio and self.first_audio is None:
            self.region_audio = True
            self._marks.append(("region", at))

    def degraded(self, at: float) -> None:
        if not self.region_audio and self.first_audio is None:
            self._marks.append(("degrade", at))

    def audio_sent(self, at: float | None = None) -> None:
        """The first audio delta is on the client's socket."""
        if self.first_audio is None:
            self.first_audio = time.perf_counter() if at is None else at
            self._marks.append(("relay" if self.region_audio else "fallback", self.first_audio))

    def region_done(self, timings: Mapping[str, float]) -> None:
        """The finishing region's own stage timings (``turn.done``), seconds by name."""
        self.region_timings = dict(timings)

    def stages(self) -> dict[str, float]:
        """Seconds per edge stage in order, then ``first_audio`` (when sent): their sum."""
        out: dict[str, float] = {}
        previous = self._start
        for name, at in self._marks:
            out[name] = max(0.0, at - previous)  # (only a client faster than real time gives < 0)
            previous = max(previous, at)
        if self.first_audio is not None:
            out["first_audio"] = self.first_audio - self._start
        return out

    def finish(self, *, observe: bool = True) -> str:
        """The metadata value (compact JSON of ms, region timings last, cut to fit 512 characters);
        ``observe``: each stage into ``voicemesh_edge_stage_seconds`` too (``first_audio`` only
        for a spoken turn: that histogram is end of speech to first audio)."""
        stages = self.stages()
        if observe:
            for name, seconds in stages.items():
                if name != "first_audio" or self.speech:
                    STAGE_SECONDS.labels(name).observe(seconds)
        ms = {name: round(1000 * s, 1) for name, s in stages.items()}
        text = _compact(ms)
        for key, seconds in self.region_timings.items():
            ms["region_" + key.removesuffix("_s")] = round(1000 * seconds, 1)
            longer = _compact(ms)
            if len(longer) > MAX_METADATA_CHARS:
                break
            text = longer
        return text


def _compact(values: Mapping[str, float]) -> str:
    return json.dumps(values, separators=(",", ":"))


def read_stages(metadata: Mapping[str, str]) -> dict[str, float]:
    """A response's stages back from its ``metadata`` (ms by name, in order); ``{}`` when absent."""
    raw = metadata.get(METADATA_KEY)
    if not raw:
        return {}
    values = json.loads(raw)
    return {str(k): float(v) for k, v in values.items()}
