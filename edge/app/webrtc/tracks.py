"""A call's audio at the boundary: the caller's Opus track read into the session's 24 kHz PCM16, and
the session's answer played on an outbound track.

Opus itself is aiortc's (decoded to 48 kHz frames, encoded from whatever rate a frame has); this
module only converts between those frames and the session's format, with FFmpeg's resampler.
"""

from __future__ import annotations

import asyncio
import fractions
from collections import deque
from collections.abc import Callable
from typing import Any

import av
from aiortc import MediaStreamTrack
from aiortc.mediastreams import MediaStreamError

RATE = 24_000
"""The session's PCM16 rate (``audio/pcm``), both ways."""
PTIME_S = 0.020
"""One outbound frame: 20 ms, as WebRTC's Opus sends them."""
_FRAME_BYTES = 2 * int(RATE * PTIME_S)


class OutboundAudio(MediaStreamTrack):  # (aiortc is untyped: its classes are Any)
    """The answer's audio, 20 ms a frame in real time: what the session sent, else silence.

    ``push`` adds a response's audio, ``end`` marks where that response's audio ends (``on_drained``
    is called with its id when the track has played up to there: ``output_audio_buffer.stopped``),
    ``clear`` drops everything not yet played (barge-in, ``output_audio_buffer.clear``)."""

    kind = "audio"

    def __init__(self, on_drained: Callable[[str], None]) -> None:
        super().__init__()
        self._buffer = bytearray()
        self._ends: deque[tuple[int, str]] = deque()
        """``(bytes still to play before the end, response id)``, oldest first."""
        self._on_drained = on_drained
        self._start: float | None = None
        self._pts = 0

    @property
    def playing(self) -> bool:
        """Audio is waiting to be played (or a response's end to be reached)."""
        return bool(self._buffer) or bool(self._ends)

    def push(self, pcm: bytes) -> None:
        self._buffer += pcm

    def end(self, response_id: str) -> None:
        self._ends.append((len(self._buffer), response_id))

    def clear(self) -> bool:
        """Drop what was not played; whether there was anything."""
        had = self.playing
        self._buffer.clear()
        self._ends.clear()
        return had

    async def recv(self) -> av.AudioFrame:
        if self.readyState != "live":
            raise MediaStreamError
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        else:  # paced by the frame count, not by sleeps: no drift
            self._pts += _FRAME_BYTES // 2
            await asyncio.sleep(max(0.0, self._start + self._pts / RATE - loop.time()))
        chunk = bytes(self._buffer[:_FRAME_BYTES])
        del self._buffer[:_FRAME_BYTES]
        self._played(len(chunk))
        frame = av.AudioFrame(format="s16", layout="mono", samples=_FRAME_BYTES // 2)
        frame.planes[0].update(chunk.ljust(_FRAME_BYTES, b"\0"))
        frame.sample_rate = RATE
        frame.pts = self._pts
        frame.time_base = fractions.Fraction(1, RATE)
        return frame

    def _played(self, n: int) -> None:
        ends = deque((left - n, rid) for left, rid in self._ends)
        while ends and ends[0][0] <= 0:
            self._on_drained(ends.popleft()[1])
        self._ends = ends


async def read_inbound(track: Any, deliver: Callable[[bytes], None], chunk_ms: int = 40) -> None:
    """The caller's audio as 24 kHz PCM16 mono, ``chunk_ms`` at a time (a microphone's appends),
    until the track ends."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
    step = 2 * RATE * chunk_ms // 1000
    pending = bytearray()
    while True:
        try:
            frame: av.AudioFrame = await track.recv()
        except MediaStreamError:
            return
        for out in resampler.resample(frame):
            pending += out.to_ndarray().tobytes()
        while len(pending) >= step:
            deliver(bytes(pending[:step]))
            del pending[:step]


__all__ = ["RATE", "OutboundAudio", "read_inbound"]
