"""The client's audio formats, as the OpenAI API names them (``session.audio.input.format`` and
``session.audio.output.format``): ``audio/pcm`` (24 kHz PCM16), ``audio/pcmu`` and ``audio/pcma``
(G.711 mu-law and A-law at 8 kHz, for telephony).

Inside the edge audio is always what it was before formats: 24 kHz float in a session's input buffer
(``edge/audio/input_audio.py``: VAD takes it to 8 kHz, STT to 16 kHz), 24 kHz PCM16 from the regions and
the fallback voice. ``InputDecoder`` and ``OutputEncoder`` convert at the
session's border, streaming (soxr resamplers that keep their state from chunk to chunk, so no
clicks at chunk boundaries). Everything that counts audio (buffered ms, VAD positions, playback
pacing, where each clause ends) counts the internal audio, so it means the same in every format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wire.audio import (
    CLIENT_RATE,
    G711_RATE,
    REGION_OUT_RATE,
    FloatAudio,
    G711Law,
    Resampler,
    float_to_g711,
    float_to_pcm16,
    g711_to_float,
    pcm16_to_float,
)
from wire.errors import BadAudio

PCM = "audio/pcm"
PCMU = "audio/pcmu"
PCMA = "audio/pcma"


@dataclass(frozen=True, slots=True)
class AudioFormat:
    """One client audio format: its rate, its bytes per sample, and its codec."""

    type: str
    rate: int
    sample_bytes: int
    law: G711Law | None = None
    """The G.711 law; ``None`` for PCM16."""

    def describe(self) -> dict[str, Any]:
        """The format as the ``session`` object shows it (only ``audio/pcm`` carries a rate)."""
        return {"type": self.type, "rate": self.rate} if self.law is None else {"type": self.type}

    def check(self, data: bytes) -> None:
        if len(data) % self.sample_bytes:
            raise BadAudio("audio must be PCM16: an even number of bytes")

    def decode(self, data: bytes) -> FloatAudio:
        self.check(data)
        return pcm16_to_float(data) if self.law is None else g711_to_float(data, self.law)

    def encode(self, samples: FloatAudio) -> bytes:
        return float_to_pcm16(samples) if self.law is None else float_to_g711(samples, self.law)


FORMATS = {
    PCM: AudioFormat(PCM, CLIENT_RATE, 2),
    PCMU: AudioFormat(PCMU, G711_RATE, 1, "ulaw"),
    PCMA: AudioFormat(PCMA, G711_RATE, 1, "alaw"),
}


class InputDecoder:
    """Client audio -> float samples at ``rate``, keeping the resampler's state across appends.

    The resampler works in blocks (about 100 ms from 8 kHz), so some audio may be held back:
    ``pending`` counts it, and ``flush()`` gives it out when the audio ends."""

    def __init__(self, fmt: AudioFormat, rate: int) -> None:
        self.format = fmt
        self.rate = rate
        self._resampler = Resampler(fmt.rate, rate)
        self._in = 0
        self._out = 0
        self.as_is = fmt.law is None and fmt.rate == rate
        """PCM16 at ``rate``: bytes whose samples the buffer may decode itself, as they are."""

    def samples(self, data: bytes) -> int:
        """How many samples at ``rate`` ``data`` becomes (for limits checked before decoding);
        ``BadAudio`` when it is not whole samples."""
        self.format.check(data)
        return len(data) // self.format.sample_bytes * self.rate // self.format.rate

    @property
    def pending(self) -> int:
        """Samples at ``rate`` taken in but not given out yet."""
        return max(0, self._in * self.rate // self.format.rate - self._out)

    def decode(self, data: bytes) -> FloatAudio:
        samples = self.format.decode(data)
        self._in += len(samples)
        return self._counted(self._resampler.process(samples))

    def flush(self) -> FloatAudio:
        """What the resampler holds; this decoder is done after it (make a new one to go on)."""
        return self._counted(self._resampler.process(np.zeros(0, dtype=np.float32), last=True))

    def _counted(self, out: FloatAudio) -> FloatAudio:
        self._out += len(out)
        return out


class OutputEncoder:
    """The regions' 24 kHz PCM16 -> the client's format, in deltas of ``frame_s`` of audio.

    A resampler holds back a little audio, so encoded audio comes out in whole frames as it is
    ready, and ``flush()`` at the end of each clause gives the rest: a clause's deltas are then
    its whole audio, as with PCM (100 ms each, the last one shorter), and nothing of it waits for
    the next clause. Clauses are separate stretches of speech from the TTS, so the resampler can
    start afresh at each one."""

    def __init__(self, fmt: AudioFormat, *, frame_s: float = 0.1) -> None:
        self.format = fmt
        self._frame = round(frame_s * fmt.rate) * fmt.sample_bytes
        self._resampler = Resampler(REGION_OUT_RATE, fmt.rate)
        self._pending = b""

    def encode(self, pcm: bytes) -> list[bytes]:
        """Deltas ready after ``pcm`` (24 kHz PCM16); PCM passes through as it came."""
        if self.format.law is None:  # (PCM is at the regions' rate already)
            return [pcm] if pcm else []
        self._pending += self.format.encode(self._resampler.process(pcm16_to_float(pcm)))
        return self._frames(whole_only=True)

    def flush(self) -> list[bytes]:
        """The last deltas of a clause."""
        if self.format.law is not None:
            tail = self._resampler.process(np.zeros(0, dtype=np.float32), last=True)
            self._pending += self.format.encode(tail)
            self._resampler = Resampler(REGION_OUT_RATE, self.format.rate)
        return self._frames(whole_only=False)

    def _frames(self, *, whole_only: bool) -> list[bytes]:
        end = len(self._pending) - len(self._pending) % self._frame if whole_only else len(self._pending)
        frames = [self._pending[i : i + self._frame] for i in range(0, end, self._frame)]
        self._pending = self._pending[end:]
        return frames
