"""A response's audio, sent like playback: at most ``lead_s`` ahead of real time.

So on barge-in what was sent is what the user (nearly) heard. A clause's transcript delta goes out
once its audio was sent whole, and the response's ``Heard`` record (``edge/turns/heard.py``) notes
it there, with where in the audio it ends: the transcript the client got, the history's text and a
``conversation.item.truncate`` at ``audio_end_ms`` all come from that one record.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from edge.audio.audio_formats import FORMATS, PCM, AudioFormat, OutputEncoder
from edge.responses.response_frames import ResponseFrames
from edge.shared.metrics import RELAY_SECONDS
from edge.turns.heard import Heard

AUDIO_CHUNK_BYTES = 4800
"""100 ms of 24 kHz PCM16 per ``response.output_audio.delta``."""
BYTES_PER_S = 48_000


@dataclass
class Clause:
    text: str
    """Its transcript piece (``Heard.clause``), sent after its audio."""
    pcm: bytes
    received: float = 0.0
    """perf_counter when the router handed it over (relay timing); 0 for the edge's own voice."""


Cue = Callable[[], Awaitable[None]]
"""Something the response sends in order with its audio (a function call after the words before it)."""


@dataclass
class Player:
    frames: ResponseFrames
    lead_s: float = 0.4
    relay_times: list[float] | None = None
    """When a list, the edge's own time per relayed audio chunk (router yield -> socket) is appended."""
    audio_format: AudioFormat = FORMATS[PCM]
    """The client's output format: pacing counts the 24 kHz audio, the deltas carry this format."""
    heard: Heard = field(default_factory=Heard)
    _queue: asyncio.Queue[Clause | Cue | None] = field(default_factory=asyncio.Queue)
    _going: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self._going.set()

    @property
    def paused(self) -> bool:
        return not self._going.is_set()

    def pause(self) -> None:
        """Send nothing more until ``resume`` (speech over the answer: ``edge/realtime/backchannel.py``);
        the client plays out what it holds, at most ``lead_s``."""
        self._going.clear()

    def resume(self) -> None:
        """Go on from where ``pause`` stopped, paced afresh (the client's buffer ran dry meanwhile)."""
        self._going.set()

    def put(self, clause: Clause | Cue | None) -> None:
        """Queue a clause (or a cue); ``None`` ends playback once everything before it was sent."""
        self._queue.put_nowait(clause)

    async def play(self) -> None:
        played_from = 0.0  # monotonic time the audio sent so far would have started playing
        sent_s = 0.0
        free_at = 0.0
        encoder = OutputEncoder(self.audio_format, frame_s=AUDIO_CHUNK_BYTES / BYTES_PER_S)
        while (clause := await self._queue.get()) is not None:
            await self._going.wait()
            if not isinstance(clause, Clause):
                await clause()
                continue
            now = time.monotonic()
            if sent_s == 0.0 or now - played_from > sent_s:  # the client's buffer ran dry
                played_from, sent_s = now, 0.0
            for off in range(0, len(clause.pcm), AUDIO_CHUNK_BYTES):
                if self.paused:
                    await self._going.wait()
                    if (now := time.monotonic()) - played_from > sent_s:  # ran dry while paused
                        played_from, sent_s = now, 0.0
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
                self.heard.played(1000 * len(chunk) / BYTES_PER_S)
            await self._send_audio(encoder.flush())  # what the resampler held back of this clause
            if delta := self.heard.sent(clause.text):  # its words, now that its audio went out
                await self.frames.text_delta(delta)

    async def _send_audio(self, deltas: list[bytes]) -> None:
        for delta in deltas:
            await self.frames.content("response.output_audio.delta", delta=base64.b64encode(delta).decode())
