"""A turn's audio as taken from the input buffer: 24 kHz float, and the 16 kHz PCM16 a region's STT
takes, made only when something asks for it (``pcm16k``).

A turn is taken whenever server VAD calls its end, and peeked at each pause in its speech; but
only a response (or input transcription) sends it anywhere. A session with ``create_response``
off, or a pause at which no answer is started, costs no resample: that was 6 % of the event loop's
thread in ``perf`` at 600 streams (docs/benchmarks.md, "Append hot path").
"""

from __future__ import annotations

from edge.shared.protocols import F32, RATE
from wire.audio import STT_RATE, float_to_pcm16, resample

MS = RATE // 1000
SPLICE = 20 * MS
"""Where a grown span's resampling starts again, before the end of what was resampled already."""


class TurnAudio:
    """Absolute input positions ``start:end`` (24 kHz samples since the session began) and their
    samples, copied out of the buffer (which moves on)."""

    __slots__ = ("_grown_end", "_grown_from", "_pcm", "_samples", "end", "start")

    def __init__(self, start: int, end: int, samples: F32, grown_from: TurnAudio | None = None) -> None:
        self.start = start
        self.end = end
        self._samples: F32 | None = samples
        self._pcm: bytes | None = None
        # Carried on only from a span already resampled: otherwise resampling it whole costs the same.
        self._grown_from = grown_from._pcm if grown_from is not None and grown_from.start == start else None
        self._grown_end = grown_from.end if grown_from is not None else start

    def __len__(self) -> int:
        """Samples at 24 kHz."""
        return self.end - self.start

    def pcm16k(self) -> bytes:
        """16 kHz PCM16, made once.

        A span that grew from one resampled before (a turn peeked at each of its pauses, then
        taken) is carried on: only its audio from ``2 * SPLICE`` before the earlier end is
        resampled. The resampler's filter reaches less than ``SPLICE`` from a cut: the earlier
        result is kept up to ``SPLICE`` before its end, and the new one from ``SPLICE`` after its
        start, which gives what resampling the whole span gives, to 1 LSB on a few samples in 10^4
        (``tests/edge/test_append_fast_path.py``)."""
        if self._pcm is None:
            self._pcm = self._resampled()
            self._samples = self._grown_from = None  # (the 24 kHz copy is three times the size)
        return self._pcm

    def _resampled(self) -> bytes:
        samples = self._samples
        assert samples is not None
        earlier = self._grown_from
        if earlier is not None:
            joint = (self._grown_end - SPLICE - self.start) // 3 * 3  # (3 samples at 24 kHz are 2 at 16)
            if joint - SPLICE >= 0:
                tail = _pcm16k(samples[joint - SPLICE :])
                return earlier[: joint // 3 * 4] + tail[SPLICE // 3 * 4 :]
        return _pcm16k(samples)


def _pcm16k(samples: F32) -> bytes:
    return float_to_pcm16(resample(samples, RATE, STT_RATE)) if len(samples) else b""
