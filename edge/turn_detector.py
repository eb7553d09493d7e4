"""Server VAD turn detection: speech probabilities per 32 ms chunk -> speech started / stopped.

Silero's own hysteresis: speech starts at ``threshold`` and ends after ``silence_duration_ms`` below
``threshold - 0.15``; the start is reported ``prefix_padding_ms`` early so the first syllable is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from edge.protocols import CHUNK_MS
from edge.state import TurnDetection


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    audio_start_ms: int


@dataclass(frozen=True, slots=True)
class SpeechStopped:
    audio_end_ms: int


class TurnDetector:
    def __init__(self, config: TurnDetection) -> None:
        self.config = config
        self.speaking = False
        self._silence_ms = 0

    def feed(self, prob: float, start_ms: int) -> SpeechStarted | SpeechStopped | None:
        """The probability of the chunk starting at ``start_ms``; an event when speaking starts/stops."""
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
                self.speaking = False
                return SpeechStopped(end_ms - self._silence_ms)
        else:
            self._silence_ms = 0
        return None
