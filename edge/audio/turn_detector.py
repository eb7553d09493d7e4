"""Server VAD turn detection: speech probabilities per 32 ms chunk -> speech started / stopped.

Silero's own hysteresis: speech starts at ``threshold`` and ends after ``silence_duration_ms`` below
``threshold - 0.15``; the start is reported ``prefix_padding_ms`` early so the first syllable is kept.

With ``pause_ms`` (shorter than the silence window), a pause that long is reported first
(``SpeechPaused``: the answer may start early, ``edge/realtime/speculation.py``), and speech that comes back
before the window is over as ``SpeechResumed``. A pause that lasts ends in ``SpeechStopped`` at the
same ``audio_end_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

from edge.shared.protocols import CHUNK_MS
from edge.shared.state import TurnDetection


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    audio_start_ms: int


@dataclass(frozen=True, slots=True)
class SpeechStopped:
    audio_end_ms: int


@dataclass(frozen=True, slots=True)
class SpeechPaused:
    audio_end_ms: int
    """Where the speech stops if the pause lasts the whole silence window."""


@dataclass(frozen=True, slots=True)
class SpeechResumed:
    pass


TurnEvent = SpeechStarted | SpeechPaused | SpeechResumed | SpeechStopped


class TurnDetector:
    def __init__(self, config: TurnDetection, *, pause_ms: int = 0) -> None:
        self.config = config
        self.pause_ms = pause_ms
        """Report a pause this long (0: never); only one shorter than the silence window is."""
        self.speaking = False
        self._silence_ms = 0
        self._paused = False
        self._pause_end_ms = 0

    @property
    def voiced(self) -> bool:
        """Speaking, and the last chunk was speech (not the silence that may yet end the turn)."""
        return self.speaking and self._silence_ms == 0

    def end_pause(self) -> SpeechStopped | None:
        """End the turn at the pause last reported, if speech has not come back since (a turn model
        called it complete: ``edge/realtime/semantic_turns.py``)."""
        if not (self.speaking and self._paused):
            return None
        self.speaking = self._paused = False
        return SpeechStopped(self._pause_end_ms)

    def feed(self, prob: float, start_ms: int) -> TurnEvent | None:
        """The probability of the chunk starting at ``start_ms``; an event when speaking starts,
        pauses, resumes or stops."""
        end_ms = start_ms + CHUNK_MS
        cfg = self.config
        if not self.speaking:
            if prob >= cfg.threshold:
                self.speaking = True
                self._silence_ms = 0
                return SpeechStarted(max(0, start_ms - cfg.prefix_padding_ms))
            return None
        if prob < max(0.01, cfg.threshold - 0.15):
            self._silence_ms += CHUNK_MS
            if self._silence_ms >= cfg.silence_duration_ms:
                self.speaking = self._paused = False
                return SpeechStopped(end_ms - self._silence_ms)
            if 0 < self.pause_ms <= self._silence_ms and not self._paused:
                self._paused = True
                self._pause_end_ms = end_ms - self._silence_ms
                return SpeechPaused(self._pause_end_ms)
            return None
        self._silence_ms = 0
        if self._paused:
            self._paused = False
            return SpeechResumed()
        return None
