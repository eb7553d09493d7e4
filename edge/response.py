"""One assistant response: router events in, Realtime events out, audio paced like playback.

Audio is sent at most ``lead_s`` ahead of real-time playback, so on barge-in what was sent is what
the user (nearly) heard: history keeps the text of the clauses whose audio was fully sent, and the
rest is dropped. Cancelling closes the router stream, which cancels the region's turn.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from edge.events import VENDOR_FAILED_OVER, VENDOR_QUEUED, VENDOR_ROUTED, new_id, server_event
from edge.fallback_voice import FallbackVoice
from router.api import Degraded, FailedOver, Routed, RoutedEvent
from wire.client import ClauseAudio
from wire.errors import VoicemeshError
from wire.turn import TextDelta, Transcript, TurnAdmitted, TurnDone, TurnError, TurnQueued, TurnRejected

Send = Callable[[str], Awaitable[None]]
AUDIO_CHUNK_BYTES = 4800
"""100 ms of 24 kHz PCM16 per ``response.output_audio.delta``."""
BYTES_PER_S = 48_000

CancelReason = Literal["turn_detected", "client_cancelled"]


@dataclass
class ResponseResult:
    status: Literal["completed", "cancelled", "failed"]
    heard_text: str
    full_text: str
    transcript: str | None
    metadata: dict[str, str]


@dataclass
class _Clause:
    text: str
    pcm: bytes
    received: float = 0.0
    """perf_counter when the router handed it over (relay timing)."""


@dataclass
class Response:
    """Runs one response; ``cancel()`` stops it at once (barge-in or ``response.cancel``)."""

    send: Send
    events: AsyncIterator[RoutedEvent]
    fallback: FallbackVoice
    hold_message: str
    user_item_id: str | None
    voice: str
    lead_s: float = 0.4
    id: str = field(default_factory=lambda: new_id("resp"))
    item_id: str = field(default_factory=lambda: new_id("item"))
    metadata: dict[str, str] = field(default_factory=dict)
    relay_times: list[float] | None = None
    """When a list, the edge's own time per relayed audio chunk (router yield -> socket) is appended."""
    _text: list[str] = field(default_factory=list)
    _heard: list[str] = field(default_factory=list)
    _transcript: str | None = None
    _queue: asyncio.Queue[_Clause | None] = field(default_factory=asyncio.Queue)
    _cancel_reason: CancelReason | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    on_transcript: Callable[[str], Awaitable[None]] | None = None

    def cancel(self, reason: CancelReason) -> None:
        if self._cancel_reason is None:
            self._cancel_reason = reason
            for task in self._tasks:
                task.cancel()

    @property
    def cancelling(self) -> bool:
        return self._cancel_reason is not None

    async def run(self) -> ResponseResult:
        await self._start_events()
        consume = asyncio.create_task(self._consume(), name=f"{self.id}-router")
        play = asyncio.create_task(self._play(), name=f"{self.id}-player")
        self._tasks = [consume, play]
        if self._cancel_reason is not None:  # cancelled before it began
            consume.cancel()
            play.cancel()
        status: Literal["completed", "cancelled", "failed"] = "completed"
        try:
            await consume
            await play
        except asyncio.CancelledError:
            if self._cancel_reason is None:
                raise  # the session itself is closing
            status = "cancelled"
        finally:
            for task in self._tasks:
                task.cancel()
            for task in self._tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            with contextlib.suppress(Exception):
                await self.events.aclose()  # type: ignore[attr-defined]
        await self._finish_events(status)
        return ResponseResult(
            status=status,
            heard_text=" ".join(self._heard) if status == "cancelled" else "".join(self._text).strip(),
            full_text="".join(self._text).strip(),
            transcript=self._transcript,
            metadata=self.metadata,
        )

    # -- router side -------------------------------------------------------------------------------

    async def _consume(self) -> None:
        try:
            async for ev in self.events:
                t0 = time.perf_counter()
                if isinstance(ev, ClauseAudio):
                    self._queue.put_nowait(_Clause(ev.clause.text, ev.pcm, t0))
                elif isinstance(ev, TextDelta):
                    self._text.append(ev.delta)
                    await self._send("response.output_audio_transcript.delta", delta=ev.delta)
                elif isinstance(ev, Transcript):
                    await self._transcribed(ev.text)
                elif isinstance(ev, Routed):
                    self.metadata["voicemesh_region"] = ev.region  # the registry's name for it
                    await self.send(
                        server_event(VENDOR_ROUTED, response_id=self.id, region=ev.region, attempt=ev.attempt)
                    )
                elif isinstance(ev, TurnAdmitted):
                    self.metadata.setdefault("voicemesh_region", ev.region)
                elif isinstance(ev, FailedOver):
                    self.metadata["voicemesh_failed_over_from"] = ev.from_region
                    self.metadata["voicemesh_region"] = ev.to_region
                    await self.send(
                        server_event(
                            VENDOR_FAILED_OVER,
                            response_id=self.id,
                            from_region=ev.from_region,
                            to_region=ev.to_region,
                            reason=ev.reason,
                        )
                    )
                elif isinstance(ev, TurnQueued):
                    await self.send(
                        server_event(
                            VENDOR_QUEUED,
                            response_id=self.id,
                            position=ev.position,
                            estimated_wait_s=ev.estimated_wait_s,
                        )
                    )
                elif isinstance(ev, Degraded):
                    await self._degrade(ev)
                    break
                elif isinstance(ev, TurnError | TurnRejected):
                    await self._degrade(Degraded(reason=ev.code))
                    break
                elif isinstance(ev, TurnDone):
                    self.metadata.setdefault("voicemesh_region", ev.region)
                    if ev.status == "failed":
                        await self._degrade(Degraded(reason=ev.error or "region_failed"))
                    break
        except VoicemeshError as exc:  # a router that raises instead of degrading: still answer
            await self._degrade(Degraded(reason=exc.code))
        finally:
            self._queue.put_nowait(None)

    async def _transcribed(self, text: str) -> None:
        if self._transcript is not None or self.user_item_id is None:
            return
        self._transcript = text
        if self.on_transcript is not None:
            await self.on_transcript(text)

    async def _degrade(self, ev: Degraded) -> None:
        self.metadata.update(voicemesh_degraded="true", served_by="edge", voicemesh_degraded_reason=ev.reason)
        self.metadata.pop("voicemesh_region", None)
        if ev.transcript:
            await self._transcribed(ev.transcript)
        text = ev.unvoiced_text.strip()
        if not text:
            text = self.hold_message
            self._text.append(text)
            await self._send("response.output_audio_transcript.delta", delta=text)
        async for sentence, pcm in self.fallback.speak(text):
            self._queue.put_nowait(_Clause(sentence, pcm))

    # -- client side -------------------------------------------------------------------------------

    async def _play(self) -> None:
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
                await self._send("response.output_audio.delta", delta=base64.b64encode(chunk).decode())
                free_at = time.perf_counter()
                if self.relay_times is not None and clause.received:
                    self.relay_times.append(free_at - ready)
                sent_s += len(chunk) / BYTES_PER_S
            self._heard.append(clause.text)

    # -- event framing -------------------------------------------------------------------------------

    def _item(self, status: str, transcript: str | None) -> dict[str, Any]:
        content = [] if transcript is None else [{"type": "output_audio", "transcript": transcript}]
        return {
            "id": self.item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": content,
        }

    def _response(
        self, status: str, output: list[dict[str, Any]], details: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "realtime.response",
            "status": status,
            "status_details": details,
            "output": output,
            "conversation_id": "conv_default",
            "output_modalities": ["audio"],
            "audio": {
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": self.voice or None}
            },
            "metadata": dict(self.metadata) or None,
        }

    async def _send(self, type_: str, **fields: Any) -> None:
        if type_.startswith("response.output_audio") or type_.startswith("response.content_part"):
            fields = {
                "response_id": self.id,
                "item_id": self.item_id,
                "output_index": 0,
                "content_index": 0,
                **fields,
            }
        await self.send(server_event(type_, **fields))

    async def _start_events(self) -> None:
        await self.send(server_event("response.created", response=self._response("in_progress", [])))
        item = self._item("in_progress", None)
        await self.send(
            server_event("response.output_item.added", response_id=self.id, output_index=0, item=item)
        )
        await self.send(
            server_event("conversation.item.added", item=item, previous_item_id=self.user_item_id)
        )
        await self._send("response.content_part.added", part={"type": "audio", "transcript": ""})

    async def _finish_events(self, status: Literal["completed", "cancelled", "failed"]) -> None:
        transcript = " ".join(self._heard) if status == "cancelled" else "".join(self._text).strip()
        item = self._item("incomplete" if status == "cancelled" else "completed", transcript)
        await self._send("response.output_audio.done")
        await self._send("response.output_audio_transcript.done", transcript=transcript)
        await self._send("response.content_part.done", part={"type": "audio", "transcript": transcript})
        await self.send(
            server_event("response.output_item.done", response_id=self.id, output_index=0, item=item)
        )
        await self.send(server_event("conversation.item.done", item=item, previous_item_id=self.user_item_id))
        details: dict[str, str] = {"type": status}
        if self._cancel_reason is not None:
            details["reason"] = self._cancel_reason
        await self.send(server_event("response.done", response=self._response(status, [item], details)))
