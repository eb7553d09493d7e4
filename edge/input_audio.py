"""One session's input audio buffer: 24 kHz from the client, 16 kHz for VAD and the region's STT.

Sample positions are absolute (16 kHz samples since the session began), so ``audio_start_ms`` /
``audio_end_ms`` mean what OpenAI's do. With server VAD, audio before the current speech is trimmed
to the prefix padding as it goes, so an open microphone never grows the buffer.
"""

from __future__ import annotations

import numpy as np

from edge.protocols import CHUNK, SpeechProbability
from edge.turn_detector import SpeechStarted, SpeechStopped, TurnDetector
from wire.audio import CLIENT_RATE, STT_RATE, Resampler, float_to_pcm16, pcm16_to_float
from wire.errors import BadAudio

MS = STT_RATE // 1000


class InputAudio:
    def __init__(self, vad: SpeechProbability, detector: TurnDetector | None, *, max_buffer_s: float) -> None:
        self._vad = vad
        self.detector = detector
        self._resampler = Resampler(CLIENT_RATE, STT_RATE)
        self._buf = np.zeros(0, dtype=np.float32)
        self._buf_start = 0
        """Absolute sample index of ``_buf[0]``."""
        self._vad_pos = 0
        """Absolute index of the next sample VAD has not seen."""
        self._max_samples = int(max_buffer_s * STT_RATE)

    @property
    def buffered_ms(self) -> int:
        return len(self._buf) // MS

    async def append(self, pcm24: bytes) -> list[SpeechStarted | SpeechStopped]:
        if len(pcm24) % 2:
            raise BadAudio("audio must be PCM16: an even number of bytes")
        if self.detector is None and len(self._buf) + len(pcm24) // 3 > self._max_samples:
            raise BadAudio(
                f"input audio buffer is full ({self._max_samples // STT_RATE} s): commit or clear it",
                code="input_audio_buffer_full",
            )
        samples = self._resampler.process(pcm16_to_float(pcm24))
        self._buf = np.concatenate([self._buf, samples])
        if self.detector is None:
            return []
        events: list[SpeechStarted | SpeechStopped] = []
        while self._vad_pos + CHUNK <= self._buf_start + len(self._buf):
            i = self._vad_pos - self._buf_start
            prob = await self._vad.probability(self._buf[i : i + CHUNK])
            ev = self.detector.feed(prob, self._vad_pos // MS)
            self._vad_pos += CHUNK
            if ev is not None:
                events.append(ev)
        if not self.detector.speaking and not events:  # (after a stop the session takes the speech first)
            self._trim(self._vad_pos - self.detector.config.prefix_padding_ms * MS)
        elif len(self._buf) > self._max_samples:
            self._trim(self._buf_start + len(self._buf) - self._max_samples)  # endless speech: keep the tail
        return events

    def _trim(self, keep_from: int) -> None:
        drop = keep_from - self._buf_start
        if drop > 0:
            self._buf = self._buf[drop:]
            self._buf_start = keep_from

    def take(self, start_ms: int | None = None, end_ms: int | None = None) -> bytes:
        """16 kHz PCM16 from ``start_ms`` (default: buffer start) to ``end_ms`` (default: all), and
        drop the buffer up to the end of what was taken."""
        start = max(0, (start_ms or 0) * MS - self._buf_start)
        end = len(self._buf) if end_ms is None else max(start, end_ms * MS - self._buf_start)
        pcm = float_to_pcm16(self._buf[start:end])
        self._trim(self._buf_start + end)
        return pcm

    def clear(self) -> None:
        self._trim(self._buf_start + len(self._buf))
        self._vad_pos = max(self._vad_pos, self._buf_start)
