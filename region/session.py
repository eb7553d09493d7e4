"""One edge connection speaking the turn protocol (``wire.turn``): one turn at a time, many in a row.

The session reads frames for as long as the socket lives, so a ``turn.cancel`` is seen while the
turn runs in its own task. Anything it cannot act on is answered with an ``error`` event and the
session carries on (a request error found mid-turn, such as the LLM refusing the prompt, ends the
turn with an ``error`` carrying its ``turn_id`` instead of ``turn.done``, so the router knows it was
the client's); when the socket goes, the running turn is cancelled and awaited (no task outlives
its connection).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

import msgspec

from region import tracing
from region.cancel import Cancelled
from region.node import RegionNode
from region.turn_state import Turn
from region.validation import check_audio_frame, check_start
from wire import log_context
from wire.audio import pcm16_to_float
from wire.client import ClauseAudio
from wire.errors import BadEvent, ProtocolError, RegionBusy, TurnInProgress, VoicemeshError
from wire.turn import (
    RegionMessage,
    TurnAdmitted,
    TurnCancel,
    TurnDone,
    TurnError,
    TurnQueued,
    TurnRejected,
    TurnStart,
    decode_client,
    encode,
)

log = logging.getLogger(__name__)


class Channel(Protocol):
    """The socket as the session needs it (Litestar's WebSocket in the app, queues in unit tests)."""

    async def receive(self) -> str | bytes | None:
        """The next frame; ``None`` once the peer has gone."""
        ...

    async def send_text(self, data: str) -> None: ...

    async def send_bytes(self, data: bytes) -> None: ...


class _Running:
    def __init__(self, turn: Turn, task: asyncio.Task[None]) -> None:
        self.turn = turn
        self.task = task


class TurnSession:
    def __init__(self, node: RegionNode, channel: Channel) -> None:
        self.node = node
        self.channel = channel
        self._send_lock = asyncio.Lock()
        self._running: _Running | None = None
        self._awaiting_audio: TurnStart | None = None
        self._discard_audio_of: str | None = None

    async def serve(self) -> None:
        try:
            while (frame := await self.channel.receive()) is not None:
                await self._on_frame(frame)
        finally:
            await self._stop_turn(notify=False)

    # -- sending -----------------------------------------------------------------------------------

    async def send(self, msg: RegionMessage | ClauseAudio) -> None:
        async with self._send_lock:  # a clause's header and its audio frame must stay adjacent
            if isinstance(msg, ClauseAudio):
                await self.channel.send_text(encode(msg.clause))
                await self.channel.send_bytes(msg.pcm)
            else:
                await self.channel.send_text(encode(msg))

    async def _error(self, exc: VoicemeshError, turn_id: str | None = None) -> None:
        self.node.metrics.errors.labels(code=exc.code).inc()
        await self.send(TurnError(code=exc.code, message=exc.message, turn_id=turn_id))

    # -- receiving ---------------------------------------------------------------------------------

    async def _on_frame(self, frame: str | bytes) -> None:
        if isinstance(frame, bytes):
            await self._on_audio(frame)
            return
        try:
            msg = decode_client(frame)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            await self._error(BadEvent(f"cannot read this message: {exc}"))
            return
        if isinstance(msg, TurnCancel):
            await self._on_cancel(msg.turn_id)
        else:
            await self._on_start(msg)

    async def _on_start(self, start: TurnStart) -> None:
        self._discard_audio_of = None
        if self._running is not None:
            await self._error(
                TurnInProgress(
                    f"turn {self._running.turn.start.turn_id} is still running:"
                    " one turn at a time per connection"
                ),
                start.turn_id,
            )
            self._discard_audio_of = start.turn_id if start.audio_bytes > 0 else None
            return
        if self._awaiting_audio is not None:
            await self._error(
                BadEvent("a new turn.start came before the audio of the previous one; that turn is dropped"),
                self._awaiting_audio.turn_id,
            )
            self._awaiting_audio = None
        try:
            check_start(start, self.node.settings.limits)
            if start.output_audio and not start.transcribe_only:  # only a spoken answer needs a voice
                self.node.stages.tts.resolve_voice(start.custom_voice or start.voice)
        except ProtocolError as exc:
            # The audio frame that follows this start belongs to a refused turn: drop it quietly.
            self._discard_audio_of = start.turn_id if start.audio_bytes > 0 else None
            await self._error(exc, start.turn_id)
            return
        if start.audio_bytes > 0:
            self._awaiting_audio = start
        else:
            gate = self.node.admission.live_first if start.is_batch else None
            self._launch(Turn(start, gives_way=gate))

    async def _on_audio(self, frame: bytes) -> None:
        start, self._awaiting_audio = self._awaiting_audio, None
        if start is None:
            if self._discard_audio_of is not None:
                self._discard_audio_of = None
                return
            await self._error(BadEvent("a binary frame came without a turn.start announcing it"))
            return
        try:
            check_audio_frame(start, frame, self.node.settings.limits)
        except ProtocolError as exc:
            await self._error(exc, start.turn_id)
            return
        self._launch(Turn(start, audio=pcm16_to_float(frame)))

    async def _on_cancel(self, turn_id: str) -> None:
        if self._awaiting_audio is not None and self._awaiting_audio.turn_id == turn_id:
            self._awaiting_audio = None
            self._discard_audio_of = turn_id
            await self.send(TurnDone(turn_id=turn_id, region=self.node.region, status="cancelled"))
            return
        running = self._running
        if running is None or running.turn.start.turn_id != turn_id:
            return  # it already ended (a cancel racing turn.done): nothing to stop
        await self._stop_turn(notify=True)

    # -- the turn ----------------------------------------------------------------------------------

    def _launch(self, turn: Turn) -> None:
        task = asyncio.create_task(self._run(turn), name=f"turn {turn.start.turn_id}")
        task.add_done_callback(_log_outcome)
        self._running = _Running(turn, task)

    async def _stop_turn(self, *, notify: bool) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        t = time.perf_counter()
        running.turn.cancel.cancel()  # reaches the STT/TTS threads at once
        running.task.cancel()
        await asyncio.wait([running.task])  # its outcome is logged by _log_outcome
        # The task is gone at once; a TTS thread returns when onnxruntime sees the terminate flag.
        await running.turn.cancel.settled()
        turn = running.turn
        turn.timings["cancel_s"] = round(time.perf_counter() - t, 4)
        turn.mark("total_s")
        self.node.metrics.observe_turn("cancelled", turn.timings, batch=turn.gives_way is not None)
        if notify:
            await self.send(self._done(turn, "cancelled"))

    def _done(self, turn: Turn, status: str, error: str | None = None) -> TurnDone:
        return TurnDone(
            turn_id=turn.start.turn_id,
            region=self.node.region,
            status=status,  # type: ignore[arg-type]
            transcript=turn.transcript,
            text=turn.text,
            timings=dict(turn.timings),
            error=error,
            usage=turn.usage,
        )

    async def _run(self, turn: Turn) -> None:
        with tracing.turn_span(turn.start, self.node.region) as span:
            turn.span = span
            await self._serve(turn)

    async def _serve(self, turn: Turn) -> None:
        start = turn.start
        log_context.bind(turn_id=start.turn_id)  # the turn's task and its stages' tasks
        region = self.node.region

        async def on_queued(position: int, wait_s: float) -> None:
            await self.send(TurnQueued(turn_id=start.turn_id, position=position, estimated_wait_s=wait_s))

        status, error = "completed", None
        refused: ProtocolError | None = None
        try:
            async with self.node.admission.slot(on_queued, start.priority) as slot:
                turn.timings["queued_s"] = slot.queued_s
                tracing.queued(slot.queued_s)
                turn.t0 = time.perf_counter()  # stage timings count from admission
                await self.send(TurnAdmitted(turn_id=start.turn_id, region=region, queued_s=slot.queued_s))
                try:
                    async for event in self.node.pipeline.run(turn):
                        await self.send(event)
                    slot.completed = True
                except Cancelled:
                    raise asyncio.CancelledError from None  # a stage saw the cancel before the task did
                except ProtocolError as exc:  # e.g. the LLM refused the request: the client's error
                    status, refused = "failed", exc
                except VoicemeshError as exc:
                    status, error = "failed", f"{exc.code}: {exc.message}"
                except Exception as exc:  # a model failing on odd input must not take the session down
                    log.exception("turn %s failed", start.turn_id)
                    status, error = "failed", f"internal_error: {exc!r}"
        except RegionBusy as exc:
            self._running = None
            if turn.gives_way is None:  # a batch item refused for want of batch room is no overload
                self.node.metrics.rejections.inc()
            await self.send(
                TurnRejected(
                    turn_id=start.turn_id, region=region, message=exc.message, retry_after_s=exc.retry_after_s
                )
            )
            return
        turn.mark("total_s")
        self.node.metrics.observe_turn(status, turn.timings, batch=turn.gives_way is not None)
        log.info("turn %s %s in %.0f ms", start.turn_id, status, 1000 * turn.timings.get("total_s", 0.0))
        self._running = None  # before turn.done: the edge may send its next turn.start right after
        if refused is not None:
            await self._error(refused, start.turn_id)  # ends the turn, as a refused turn.start does
            return
        await self.send(self._done(turn, status, error))


def _log_outcome(task: asyncio.Task[None]) -> None:
    # A turn task only fails when its socket did (the send raised): nothing to answer, just note it.
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.info("%s ended with its connection: %r", task.get_name(), exc)
