"""One session's response slot: start a response on the conversation's pending input (or on what
``response.create`` asked for: ``edge/realtime/response_params.py``), cancel it, and when it ends put what was
heard into the conversation (unless it was out of band) and save the session. A response that
answered user audio but ended without its transcript hands that audio to the session's input
transcription (``edge/realtime/transcription.py``).

Every turn is routed in the session's residency, with its key's priority class (``edge/tenancy/
session_tenancy.py``). When no region of it can serve the turn, the key's ``on_no_region`` decides: the
edge's own voice (the router's ``Degraded``, as always) or an ``error`` (the response fails, nothing is
spoken). Each finished response is booked: its audit record and usage (``edge/tenancy/accounting.py``).

A session has at most one response at a time; its task is this session's only background work.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec

from edge.realtime.conversation import Conversation
from edge.realtime.conversation_items import UserTurn
from edge.realtime.response_params import answer_input, response_params, turn_start
from edge.realtime.response_trail import book_response
from edge.realtime.session_deps import SessionDeps
from edge.realtime.speculation import SpeculativeTurn
from edge.realtime.transcription import InputTranscription
from edge.responses.params import ResponseParams
from edge.responses.response import CancelReason, Response
from edge.responses.stages import silence_window_s
from edge.shared.events import Send
from edge.shared.metrics import RESPONSES
from edge.shared.state import SessionState
from edge.shared.tracing import task_context, traced_turn
from edge.tenancy.audit import TurnTrail
from edge.tenancy.session_tenancy import refusal_for, routing_of
from wire import log_context
from wire.errors import BadEvent, ProtocolError
from wire.turn import TurnStart

log = logging.getLogger(__name__)


class ResponseLifecycle:
    def __init__(
        self,
        deps: SessionDeps,
        state: SessionState,
        conversation: Conversation,
        send: Send,
        transcription: InputTranscription,
    ) -> None:
        self._deps = deps
        self._state = state
        self._conversation = conversation
        self._send = send
        self._transcription = transcription
        self.response: Response | None = None
        self.last_response_id: str | None = None
        self.turn_start: TurnStart | None = None
        self.turn: UserTurn | None = None
        """Of the response in progress, ``turn_start``: what it asked the router; this: what it answers
        (a snapshot keeps both, the turn's audio until it is transcribed)."""
        self._task: asyncio.Task[None] | None = None
        self.speculative: SpeculativeTurn | None = None
        """The turn started at a pause in the user's speech (``speculate``), if one is."""
        self._drops: set[asyncio.Task[None]] = set()
        self._early: SpeculativeTurn | None = None
        """The early turn the response in progress took over, if it did."""
        self.on_done: Callable[[], None] | None = None
        """Called as each ``response.done`` has gone out (``SessionHooks.response_done``)."""

    def start(self, params: ResponseParams | None = None, *, speech_stopped_at: float | None = None) -> None:
        """``response.create`` with its checked ``params`` (``edge/realtime/response_params.py``), or the end
        of a VAD turn (the session's settings): answer the pending input, or what ``params`` say.
        ``speech_stopped_at`` (perf_counter): when server VAD called the end of the speech this
        answers, where the response's stages begin (``edge/responses/stages.py``)."""
        spec, self.speculative = self.speculative, None
        early = None
        try:
            if self.response is not None:
                raise BadEvent(
                    "a response is already in progress", code="conversation_already_has_active_response"
                )
            state, deps = self._state, self._deps
            params = params or response_params(None, state, deps.settings)
            turn = answer_input(params, self._conversation, state)
            start, turn = turn_start(params, turn, state, deps.settings.limits.content)
            if turn.audio_item_id is not None:
                self._transcription.taken(turn.audio_item_id)  # this response transcribes it
            if spec is not None and spec.matches(routing_of(state), start, self._audio_of(turn)):
                start, early = spec.start, spec
        finally:
            if spec is not None and early is None:
                self._closing(spec.drop())
        self._launch(start, params, turn, early)
        td = state.turn_detection
        if speech_stopped_at is not None and td is not None and self.response is not None:
            sent_at = early.started_at if early is not None else None
            self.response.frames.stages.heard_speech(
                speech_stopped_at, silence_window_s(td.silence_duration_ms), sent_at=sent_at
            )
            if early is not None:
                early_ms = max(0.0, speech_stopped_at - early.started_at) * 1000
                self.response.frames.metadata["voicemesh_started_early_ms"] = f"{early_ms:.0f}"

    def speculate(self, audio: bytes) -> None:
        """A pause in the user's speech: start the turn its end would start, with ``audio``, unseen
        (``edge/realtime/speculation.py``; asking, under ``semantic_vad``, whether its words end it);
        ``start`` takes it over if the same turn is called. Not while a response is in progress."""
        if self.response is not None or not audio:
            return
        self.drop_speculation()
        state = self._state
        params = response_params(None, state, self._deps.settings)
        try:
            next_turn = self._conversation.next_turn(audio)
            start, _ = turn_start(params, next_turn, state, self._deps.settings.limits.content)
        except ProtocolError:
            return  # the called turn would be refused too: it says so then
        start.end_of_turn = state.turn_detection is not None and state.turn_detection.eagerness is not None
        routing = routing_of(state)
        span, events = traced_turn(
            "realtime", start, lambda: self._deps.router.run_turn(routing, start, audio), speculative=True
        )
        self.speculative = SpeculativeTurn(routing, start, audio, events, span=span)

    def drop_speculation(self) -> None:
        """Speech came back: the turn started at the pause is not the one that will be called."""
        spec, self.speculative = self.speculative, None
        if spec is not None:
            self._closing(spec.drop())

    def _closing(self, closing: Coroutine[Any, Any, None]) -> None:
        """Closing a dropped turn (its region's cancel) goes on beside the session; ``close`` waits."""
        task = asyncio.create_task(closing)
        self._drops.add(task)
        task.add_done_callback(self._drops.discard)

    @staticmethod
    def _audio_of(turn: UserTurn) -> bytes | None:
        """The audio the router gets with ``turn``: none when its transcript is known."""
        return None if turn.transcript is not None else turn.audio or None

    def continue_turn(self, start: TurnStart, *, item_id: str | None = None, audio: bytes = b"") -> None:
        """Finish an answer another edge was playing when it went away (``edge/realtime/resume.py``):
        ``start`` as it sent it, ``heard_text`` what the client heard, continued as after a region
        failover; ``audio``: its audio item ``item_id``'s, when the words were not known yet."""
        if self.response is not None:
            raise BadEvent(
                "a response is already in progress", code="conversation_already_has_active_response"
            )
        params = response_params(None, self._state, self._deps.settings)
        params = dataclasses.replace(params, output_audio=start.output_audio)
        start = msgspec.structs.replace(start, priority=self._state.priority)  # the key's, now
        turn = UserTurn(list(start.history), item_id, audio, start.text, start.transcript)
        self._launch(start, params, turn)

    def _launch(
        self,
        start: TurnStart,
        params: ResponseParams,
        turn: UserTurn,
        early: SpeculativeTurn | None = None,
    ) -> None:
        """Start the response; ``early``: the turn already started for it, at a pause."""
        state, deps = self._state, self._deps
        self.turn_start, self.turn = start, turn
        audio = self._audio_of(turn)
        trail = TurnTrail()
        if early is None:
            span, routed = traced_turn(
                "realtime", start, lambda: deps.router.run_turn(routing_of(state), start, audio)
            )
            arrival = time.perf_counter
        else:
            span, routed, arrival = early.span, early.adopt(), early.arrival
        self._early = early
        response = Response(
            send=self._send,
            events=routed,
            fallback=deps.fallback,
            hold_message=deps.settings.hold_message,
            user_item_id=self._conversation.last_item_id,  # its item's ``previous_item_id``
            voice=params.voice,
            lead_s=deps.settings.playback_lead_s,
            relay_times=deps.relay_times,
            output_format=state.output_audio_format,
            on_transcript=self._transcript_writer(turn),
            on_call=None if params.out_of_band else self._conversation.add_call,
            params=params,
            prompt=(start.instructions, *(m.content for m in start.history), start.text or ""),
            arrival=arrival,
            trail=trail,
            refuse=lambda ev: refusal_for(state, ev),
            turn_id=start.turn_id,
        )
        if not params.out_of_band:
            heard = response.heard if params.output_audio else None  # None: text only
            self._conversation.open_answer(response.frames.item_id, heard)
        self.response = response
        self.last_response_id = response.id
        self._task = asyncio.create_task(
            self._run(response, turn, start, trail, len(audio or b"")),
            name=response.id,
            context=task_context(span),
        )

    def cancel(self, reason: CancelReason) -> bool:
        """Stop the response in progress; ``False`` when there is none (or it is already stopping)."""
        if self.response is None or self.response.cancelling:
            return False
        self.response.cancel(reason)
        return True

    async def stop_item(self, item_id: str) -> None:
        """Stop the response playing ``item_id``, if any (as ``response.cancel``); wait for its end."""
        response, task = self.response, self._task
        if response is None or task is None or response.frames.item_id != item_id:
            return
        response.cancel("client_cancelled")
        await asyncio.wait([task])

    def cancel_item(self, item_id: str) -> None:
        """The response playing ``item_id`` (if one is) stops: its item was deleted."""
        if self.response is not None and self.response.frames.item_id == item_id:
            self.response.cancel("client_cancelled")

    async def clear_audio(self) -> str | None:
        """``output_audio_buffer.clear``: cancel the response playing; the id of the last, if any."""
        response, task = self.response, self._task
        if response is not None and task is not None:
            response.cancel("client_cancelled")
            await asyncio.wait([task])
        return self.last_response_id

    async def finished(self) -> None:
        """Wait for the response in progress, if any, to end (a draining edge lets it finish)."""
        if self._task is not None:
            await asyncio.wait([self._task])

    async def close(self) -> None:
        """The session is closing: stop the response without finishing it."""
        self.drop_speculation()
        await asyncio.gather(*self._drops, return_exceptions=True)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._early is not None:
            await self._early.aclose()  # (a response cancelled before it read anything)

    def _transcript_writer(self, turn: UserTurn) -> Callable[[str], Awaitable[None]] | None:
        item_id = turn.audio_item_id
        if item_id is None:
            return None
        return lambda transcript: self._transcription.heard(item_id, transcript, len(turn.audio))

    async def _run(
        self, response: Response, turn: UserTurn, start: TurnStart, trail: TurnTrail, audio_in: int
    ) -> None:
        log_context.bind(turn_id=start.turn_id, response_id=response.id)  # this task and the response's
        try:
            result = await response.run()
            if response.params is None or not response.params.out_of_band:
                completed = result.status == "completed"
                self._conversation.answered(response.frames.item_id, result.heard_text, completed=completed)
        finally:
            # Free the slot as ``response.done`` goes out (no await between): a client may send
            # ``response.create`` as soon as it reads it.
            if self.response is response:
                self.response = None
        if self.on_done is not None:
            self.on_done()
        if (early := self._early) is not None and early.start.turn_id == start.turn_id:
            await early.aclose()  # (already closed unless the response ended before reading it)
        served_by = result.metadata.get("served_by", "region")
        RESPONSES.labels(result.status, served_by).inc()
        self._deps.recent_turns.add(self._state.id, start.turn_id, response, result)
        region = result.metadata.get("voicemesh_region", served_by)
        log.info("response %s %s, served by %s", response.id, result.status, region)
        # Booked at once, in a task of its own: a client that hangs up on ``response.done`` closes
        # the session, which cancels this one, and the turn must still be booked.
        booking = book_response(self._deps.accounting, self._state, response, result, start, trail, audio_in)
        if turn.audio_item_id is not None and result.transcript is None:  # the audio is still unheard
            if served_by == "edge":
                reason = result.metadata.get("voicemesh_degraded_reason", "degraded")
                await self._transcription.degraded(turn.audio_item_id, reason)
            else:
                await self._transcription.request(turn.audio_item_id, turn.audio)
        # The snapshot without waiting for the bookkeeping (which may wait on Redis): a client may
        # resume the moment it reads ``response.done``.
        await self._deps.snapshots.save(self._state)
        await asyncio.shield(booking)
