"""A response's audio, sent like playback: at most ``lead_s`` ahead of real time.

So on barge-in what was sent is what the user (nearly) heard: ``heard`` lists the clauses whose
audio was fully sent, and history keeps only those.
"""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass, field

from edge.metrics import RELAY_SECONDS
from edge.response_frames import ResponseFrames

AUDIO_CHUNK_BYTES = 4800
"""100 ms of 24 kHz PCM16 per ``response.output_audio.delta``."""
BYTES_PER_S = 48_000


@dataclass
class Clause:
    text: str
    pcm: bytes
    received: float = 0.0
    """perf_counter when the router handed it over (relay timing); 0 for the edge's own voice."""


@dataclass
class Player:
    frames: ResponseFrames
    lead_s: float = 0.4
    relay_times: list[float] | None = None
    """When a list, the edge's own time per relayed audio chunk (router yield -> socket) is appended."""
    heard: list[str] = field(default_factory=list)
    _queue: asyncio.Queue[Clause | None] = field(default_factory=asyncio.Queue)

    def put(self, clause: Clause | None) -> None:
        """Queue a clause; ``None`` ends playback once everything before it was sent."""
        self._queue.put_nowait(clause)

    async def play(self) -> None:
        played_from = 0.0  # monotonic time the audio sent so far would have started playing
        sent_s = 0.0
        free_at = 0.0
        while (clause := await self._queue.get()) is not None:
            now = time.monotonic()
            if sent_s == 0.0 or now - played_from > sent_s:  # the client's buffer ran dry
                played_from, sent_s = now, 0.0
            for off in range(0, len(clause.pcm), AUDIO_CHUNK_BYTES):
                ahead = sent_s - (time.monotonic() - played_from) - self.lead_s
                if ahead > 0:
                    await asyncio.sleep(ahead)
                    free_at = time.perf_counter()
                # Relay cost: from when this chunk could go (it arrived, or the player got free after
                # the previous chunk or its playback pacing) to when it is on the socket.
                ready = max(clause.received, free_at) if off == 0 else time.perf_counter()
                chunk = clause.pcm[off : off + AUDIO_CHUNK_BYTES]
                await self.frames.content(
                    "response.output_audio.delta", delta=base64.b64encode(chunk).decode()
                )
                free_at = time.perf_counter()
                if clause.received:
                    RELAY_SECONDS.observe(free_at - ready)
                    if self.relay_times is not None:
                        self.relay_times.append(free_at - ready)
                sent_s += len(chunk) / BYTES_PER_S
            self.heard.append(clause.text)
