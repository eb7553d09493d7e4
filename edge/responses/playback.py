"""A response's audio, sent like playback: at most ``lead_s`` ahead of real time.

So on barge-in what was sent is what the user (nearly) heard: ``heard`` lists the clauses whose
audio was fully sent, and history keeps only those. The ``AudioTimeline`` says where in the audio
each clause ends, so ``conversation.item.truncate`` can cut the transcript at a client's
``audio_end_ms``.
"""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass, field

from edge.audio.audio_formats import FORMATS, PCM, AudioFormat, OutputEncoder
from edge.responses.response_frames import ResponseFrames
from edge.shared.metrics import RELAY_SECONDS

AUDIO_CHUNK_BYTES = 4800
"""100 ms of 24 kHz PCM16 per ``response.output_audio.delta``."""
BYTES_PER_S = 48_000


@dataclass
class AudioTimeline:
    """The audio of one assistant item as sent so far: its length, and where each clause ends."""

    sent_ms: float = 0.0
    ends: list[tuple[str, float]] = field(default_factory=list)
    """``(clause text, ms into the audio where its audio ends)`` of every fully sent clause."""

    @property
    def heard(self) -> list[str]:
        return [text for text, _ in self.ends]

    def heard_until(self, audio_end_ms: float) -> list[str]:
        """The clauses whose audio ended by ``audio_end_ms``."""
        return [text for text, end in self.ends if end <= audio_end_ms]

    def truncate(self, audio_end_ms: float) -> None:
        """The audio now ends at ``audio_end_ms`` (a client cut it there)."""
        self.sent_ms = min(self.sent_ms, audio_end_ms)
        self.ends = [(text, end) for text, end in self.ends if end <= audio_end_ms]


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
    audio_format: AudioFormat = FORMATS[PCM]
    """The client's output format: pacing counts the 24 kHz audio, the deltas carry this format."""
    timeline: AudioTimeline = field(default_factory=AudioTimeline)
    _queue: asyncio.Queue[Clause | None] = field(default_factory=asyncio.Queue)

    def put(self, clause: Clause | None) -> None:
        """Queue a clause; ``None`` ends playback once everything before it was sent."""
        self._queue.put_nowait(clause)

    async def play(self) -> None:
        played_from = 0.0  # monotonic time the audio sent so far would have started playing
        sent_s = 0.0
        free_at = 0.0
        encoder = OutputEncoder(self.audio_format, frame_s=AUDIO_CHUNK_BYTES / BYTES_PER_S)
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
                await self._send_audio(encoder.encode(chunk))
                free_at = time.perf_counter()
                if clause.received:
                    RELAY_SECONDS.observe(free_at - ready)
                    if self.relay_times is not None:
                        self.relay_times.append(free_at - ready)
                sent_s += len(chunk) / BYTES_PER_S
                self.timeline.sent_ms += 1000 * len(chunk) / BYTES_PER_S
            await self._send_audio(encoder.flush())  # what the resampler held back of this clause
            self.timeline.ends.append((clause.text, self.timeline.sent_ms))

    async def _send_audio(self, deltas: list[bytes]) -> None:
        for delta in deltas:
            await self.frames.content("response.output_audio.delta", delta=base64.b64encode(delta).decode())

    @property
    def heard(self) -> list[str]:
        """The clauses whose audio was fully sent."""
        return self.timeline.heard
