"""A session's input audio transcription (``session.audio.input.transcription``).

With it on, every committed user audio turn gets ``conversation.item.input_audio_transcription.delta``
and ``.completed``, or ``.failed`` with an error:

* audio a response answers is transcribed by that response's region on the way (its ``transcript``
  event): the events go out when it arrives, no second STT;
* audio no response answers (``turn_detection.create_response: false``, a client's commit, a
  response that ended before its transcript) gets a turn of its own, ``TurnStart.transcribe_only``:
  STT alone on a region, through the router like any turn (failover included). They run one at a
  time per session, at most ``MAX_WAITING`` queued (more fail at once: a client cannot fan out
  region work by committing faster than it is transcribed). A response that takes the audio
  meanwhile (a client's commit then ``response.create``, as Pipecat sends them) transcribes it
  itself: the separate turn is dropped, or cancelled if already running (``taken``);
* audio whose response the edge's fallback voice answered (no region left) cannot be transcribed:
  the edge runs no STT of its own, so it gets ``.failed`` naming the router's reason.

A transcription turn is routed in the session's residency with its key's priority, like a response
(``edge/tenancy/session_tenancy.py``), and booked like one (audit record and usage:
``edge/tenancy/accounting.py``).

The model name the client asks for is echoed, not used: a region's own STT transcribes. Without
transcription on, a response's transcript still gives ``.completed`` (no ``.delta``), as always.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from edge.realtime.conversation import Conversation
from edge.shared.events import Send, new_id, server_event
from edge.shared.state import SessionState
from edge.shared.tracing import traced_turn
from edge.tenancy.accounting import Accounting
from edge.tenancy.audit import TurnTrail
from edge.tenancy.session_tenancy import routing_of
from edge.turns.transcribe_turn import TranscriptionResult, book_transcription, run_transcription
from router.api import TurnRouter
from wire.errors import VoicemeshError
from wire.tasks import cancel_and_wait
from wire.turn import TurnStart

log = logging.getLogger(__name__)

MAX_WAITING = 4
"""Transcribe-only turns one session may have queued behind the running one."""
PCM16K_BYTES_PER_S = 32_000


class InputTranscription:
    def __init__(
        self,
        state: SessionState,
        conversation: Conversation,
        send: Send,
        *,
        router: TurnRouter,
        accounting: Accounting,
    ) -> None:
        self._router = router
        self._accounting = accounting
        self._state = state
        self._conversation = conversation
        self._send = send
        self._waiting: deque[tuple[str, bytes]] = deque()
        self._worker: asyncio.Task[None] | None = None
        self._running: tuple[str, asyncio.Task[None]] | None = None
        """The item being transcribed, and its turn's task."""

    @property
    def on(self) -> bool:
        return self._state.transcription is not None

    async def request_pending(self) -> None:
        """Transcribe (when on) the committed audio no response has taken."""
        # (``on`` first: the pending audio is resampled when read, ``edge/audio/turn_audio.py``)
        if self.on and (pending := self._conversation.pending_audio) is not None:
            await self.request(*pending)

    async def heard(self, item_id: str, transcript: str, audio_bytes: int) -> None:
        """A region transcribed ``item_id``'s audio (once per item: a repeat sends nothing)."""
        if not self._conversation.transcribed(item_id, transcript):
            return
        ids = {"item_id": item_id, "content_index": 0}
        if self.on:
            await self._send(
                server_event("conversation.item.input_audio_transcription.delta", **ids, delta=transcript)
            )
        seconds = round(audio_bytes / PCM16K_BYTES_PER_S, 3)
        await self._send(
            server_event(
                "conversation.item.input_audio_transcription.completed",
                **ids,
                transcript=transcript,
                usage={"type": "duration", "seconds": seconds},
            )
        )

    async def failed(self, item_id: str, code: str, message: str) -> None:
        """``item_id``'s audio could not be transcribed (sent only with transcription on)."""
        if not self.on:
            return
        error = {"type": "server_error", "code": code, "message": message}
        await self._send(
            server_event(
                "conversation.item.input_audio_transcription.failed",
                item_id=item_id,
                content_index=0,
                error=error,
            )
        )

    async def degraded(self, item_id: str, reason: str) -> None:
        """The edge's own voice answered ``item_id``: no region was left to transcribe it."""
        await self.failed(item_id, *_unavailable(reason))

    async def request(self, item_id: str, pcm16k: bytes) -> None:
        """Transcribe ``item_id``'s audio in a turn of its own (when transcription is on)."""
        if not self.on:
            return
        if len(self._waiting) >= MAX_WAITING:
            await self.failed(
                item_id, "rate_limit_exceeded", "too many transcriptions waiting in this session"
            )
            return
        self._waiting.append((item_id, pcm16k))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work(), name=f"{self._state.id}-transcription")

    def taken(self, item_id: str) -> None:
        """A response now answers ``item_id``'s audio, and transcribes it on the way: no turn of its
        own (the response hands it back with ``request`` if it ends without a transcript)."""
        self._waiting = deque(w for w in self._waiting if w[0] != item_id)
        if self._running is not None and self._running[0] == item_id:
            self._running[1].cancel()  # closes the router stream: the region stops its STT

    async def words(self, pcm16k: bytes, *, prompt: str | None = None) -> TranscriptionResult:
        """What ``pcm16k`` says, for the edge itself (no item, no events): ``transcribe_once``."""
        return await transcribe_once(self._router, self._accounting, self._state, pcm16k, prompt=prompt)

    async def close(self) -> None:
        if self._worker is not None:
            await cancel_and_wait(self._worker)

    async def _work(self) -> None:
        while self._waiting:
            item_id, pcm = self._waiting.popleft()
            item = self._conversation.find(item_id)
            if item is None or item.text is not None:
                continue  # deleted, or a response transcribed it meanwhile
            task = asyncio.create_task(self._transcribe_safely(item_id, pcm), name=f"transcribe {item_id}")
            self._running = (item_id, task)
            try:
                await asyncio.wait([task])  # a ``taken`` cancel ends the task, not the worker
            finally:
                self._running = None
                await cancel_and_wait(task)  # (when the worker itself is cancelled: the session closes)

    async def _transcribe_safely(self, item_id: str, pcm: bytes) -> None:
        try:
            await self._transcribe(item_id, pcm)
        except VoicemeshError as exc:  # a router that raises instead of yielding its outcome
            await self.failed(item_id, exc.code, exc.message)
        except Exception as exc:  # a bug costs this transcription, not the session
            log.exception("session %s: transcription of %s failed", self._state.id, item_id)
            await self.failed(item_id, "server_error", type(exc).__name__)

    async def _transcribe(self, item_id: str, pcm: bytes) -> None:
        """One transcribe-only turn, read to its end (so the router counts it as served)."""
        result = await transcribe_once(self._router, self._accounting, self._state, pcm)
        if result.transcript is not None:
            await self.heard(item_id, result.transcript.text, len(pcm))
        elif result.degraded is not None and result.degraded.transcript:
            await self.heard(item_id, result.degraded.transcript, len(pcm))
        elif result.degraded is not None:
            await self.failed(item_id, *_unavailable(result.degraded.reason))
        elif result.refused is not None:
            await self.failed(item_id, result.refused.code, result.refused.message)
        else:
            await self.failed(
                item_id, "transcription_failed", "the region ended the turn without a transcript"
            )


async def transcribe_once(
    router: TurnRouter, accounting: Accounting, state: SessionState, pcm: bytes, *, prompt: str | None = None
) -> TranscriptionResult:
    """16 kHz ``pcm`` through one transcribe-only turn (``TurnStart.transcribe_only``: STT alone on a
    region, routed in the session's residency with its key's priority), read to its end so the router
    counts it as served, and booked like any turn. Whisper gets the session's transcription language
    and prompt (``session.audio.input.transcription``); ``prompt`` replaces the latter."""
    asked = state.transcription
    start = TurnStart(
        turn_id=new_id("turn"), transcribe_only=True, output_audio=False, priority=state.priority,
        language=(asked.language if asked else None) or "",
        prompt=prompt if prompt is not None else (asked.prompt if asked else None) or "",
        timestamps=False,  # (only the words are sent)
    )  # fmt: skip
    trail = TurnTrail()
    status = "failed"
    try:
        routing = routing_of(state)
        _, events = traced_turn("transcription", start, lambda: router.run_turn(routing, start, pcm))
        result = await run_transcription(events, trail)
        if result.transcript is not None or result.degraded is not None:
            status = "completed"
    except asyncio.CancelledError:  # the audio was taken by a response, or the session closed
        status = "cancelled"
        raise
    finally:
        await book_transcription(
            accounting, trail, key_id=state.key_id, session_id=state.id, turn_id=start.turn_id,
            residency=state.residency, status=status, audio_in_bytes=len(pcm),
        )  # fmt: skip
    return result


def _unavailable(reason: str) -> tuple[str, str]:
    """The ``.failed`` error (code, message) when no region was left (``reason``: the router's)."""
    return "transcription_unavailable", f"no region could transcribe this audio ({reason})"
