"""One Realtime session: each client event read, checked and handed to the part of the session
that owns it; a bad event is answered with an ``error`` event and the session carries on.

The parts: ``client_events`` (each event to the part that owns it), ``session_update``
(settings), ``input_turns`` and ``vad_turns`` (input audio, VAD, commits, what a turn's end
starts), ``conversation`` (items and history) and ``response_lifecycle`` (the response in
progress), each given only what it uses of the edge (``session_deps``). Only this session's tasks
are touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Protocol

from edge.realtime.client_events import ClientEvents
from edge.realtime.conversation import Conversation
from edge.realtime.response_lifecycle import ResponseLifecycle
from edge.realtime.resume import (
    VENDOR_RESUME_REQUIRED,
    VENDOR_RESUMED,
    SessionKeeper,
    continue_answer,
    replay,
    restore,
    snapshot_of,
)
from edge.realtime.session_deps import SessionDeps
from edge.realtime.session_snapshot import SessionSnapshot
from edge.realtime.transcription import InputTranscription
from edge.realtime.vad_turns import VadTurns
from edge.shared.errors import InternalError, RateLimited, SessionTakenOver
from edge.shared.events import (
    APPEND,
    Send,
    client_event_id,
    error_event,
    read_append,
    read_client_frame,
    server_event,
    validate_client_event,
)
from edge.shared.key_policy import DEFAULT_POLICY, KeyPolicy
from edge.shared.metrics import CLIENT_EVENTS, DIRECT_FRAMES, Tally
from edge.shared.state import SessionState
from wire import log_context
from wire.errors import BadAudio, BadEvent, VoicemeshError
from wire.rates import TokenBucket

log = logging.getLogger("voicemesh.edge")

_APPENDED = CLIENT_EVENTS.labels(APPEND, "ok")
"""Looked up once: ``labels()`` per event cost more than the counting."""

CloseSocket = Callable[[int, str], Awaitable[None]]


class SessionHooks(Protocol):
    """What the connection adds around a session's events (``edge/realtime/key_session.py``)."""

    async def session_created(self) -> None:
        """Right after ``session.created`` (the client's next event)."""

    def response_done(self) -> None:
        """As each ``response.done`` goes out; must not wait (the response slot is free)."""


class RealtimeSession:
    def __init__(
        self,
        deps: SessionDeps,
        state: SessionState,
        send: Send,
        close_socket: CloseSocket | None = None,
        *,
        lease: str | None = None,
        policy: KeyPolicy = DEFAULT_POLICY,
        hooks: SessionHooks | None = None,
    ) -> None:
        # The connection's task (and every task the session starts) logs with the session's id.
        log_context.bind(session_id=state.id)
        self.deps = deps
        self.state = state
        self.policy = policy
        """The connection's key policy: which voices it may use (``edge/shared/key_policy.py``)."""
        self._send = send
        self._close_socket = close_socket
        self.lease = lease or secrets.token_hex(12)
        """This connection's claim on the session (``edge/realtime/session_snapshot.py``)."""
        self.ended: str | None = None
        """Why the edge ended the connection (``session_taken_over``, ``edge_draining``)."""
        self._closed = False
        limits = deps.settings.limits
        self._bucket = TokenBucket(rate_per_s=limits.events_per_s, burst=limits.events_burst)
        self._max_event_bytes = limits.max_event_bytes
        self._appended_now = Tally(_APPENDED, DIRECT_FRAMES)
        """Appends taken by ``handle_now``, counted in batches (flushed at ``close``)."""
        self.conversation = Conversation(
            state, send, max_history=limits.max_history_messages, limits=limits.content
        )
        self.transcription = InputTranscription(
            state, self.conversation, send, router=deps.router, accounting=deps.accounting
        )
        self.responses = ResponseLifecycle(deps, state, self.conversation, send, self.transcription)
        self._hooks = hooks
        if hooks is not None:
            self.responses.on_done = hooks.response_done
        self.vad_turns = VadTurns(
            deps.vad.stream(), state, self.conversation, send, deps.settings, responses=self.responses,
            transcription=self.transcription, save=deps.snapshots.save, turn_model=deps.turn_model,
        )  # fmt: skip
        self.turns = self.vad_turns.input
        self._keeper = SessionKeeper(
            deps.snapshots, state, self.responses, self.lease, self.taken_over,
            interval_s=deps.settings.resume.snapshot_interval_s,
        )  # fmt: skip
        self.events = ClientEvents(
            deps, state, send, policy, conversation=self.conversation, responses=self.responses,
            transcription=self.transcription, turns=self.turns,
        )  # fmt: skip

    async def open(self, resumed: SessionSnapshot | None = None) -> None:
        """``session.created``; for a resumed session (``edge/realtime/resume.py``) then its conversation and
        the rest of an answer cut short."""
        self.deps.snapshots.live[self.state.id] = self
        if resumed is None:
            await self.deps.snapshots.save(self.state)
        else:
            items = restore(resumed, self.conversation)
        await self._send(server_event("session.created", session=self.events.session_object()))
        if self._hooks is not None:
            await self._hooks.session_created()
        if resumed is not None:
            for event in replay(items):
                await self._send(event)
            continuing = continue_answer(resumed, self.responses)
            resumed_event = server_event(
                VENDOR_RESUMED, session_id=self.state.id, items=len(items), continuing=continuing
            )
            await self._send(resumed_event)
        self._keeper.start()

    def snapshot(self) -> SessionSnapshot:
        return snapshot_of(self.state, self.conversation, self.responses, self.lease)

    async def taken_over(self) -> None:
        """Another connection resumed this session: tell the client, close (1000: not to be retried,
        or two clients would take it from each other in turn), and save nothing more."""
        if self.ended is not None:
            return
        self.ended = SessionTakenOver.code
        if self.deps.snapshots.live.get(self.state.id) is self:
            del self.deps.snapshots.live[self.state.id]
        err = SessionTakenOver("this session was resumed by another connection: this one is closed")
        await self._end(error_event(err), 1000, err.code)

    async def drain(self, wait_s: float) -> None:
        """The edge is going away: let the turn in progress (spoken or answered) finish, at most
        ``wait_s`` (an answer still playing then is snapshotted as heard and continued on resume),
        snapshot the session, tell the client how to resume it, and close 1012 (service restart),
        which stock clients retry."""
        if self.ended is not None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                # A turn being spoken is not in the snapshot (its audio is not kept): let it end and
                # be answered too. Idle = no answer playing and nobody speaking.
                while True:
                    await self.responses.finished()
                    # The VAD may run behind its audio (a busy machine): speech the client sent and
                    # the VAD has not heard yet is a turn being spoken, not idle.
                    await self.turns.settled()
                    if self.responses.response is None and not self.vad_turns.speaking:
                        break
                    await asyncio.sleep(0.05)
        self.ended = "edge_draining"
        await self._keeper.aclose()
        await self.deps.snapshots.save(self.state)
        event = server_event(
            VENDOR_RESUME_REQUIRED, session_id=self.state.id, reason="edge_draining",
            # Relative: the client reconnects where it connected (the load balancer), not to this edge.
            resume_url=f"/v1/realtime?session_id={self.state.id}",
        )  # fmt: skip
        await self._end(event, 1012, "edge_draining")

    async def _end(self, event: str, code: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            await self._send(event)
        if self._close_socket is not None:
            with contextlib.suppress(Exception):
                await self._close_socket(code, reason)

    async def close(self) -> None:
        """The connection ended: keep the snapshot (a client may resume within its TTL), with the
        answer in flight as heard so far, then stop this connection's work. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._appended_now.flush()
        await self.turns.close()
        await self._keeper.aclose()
        if self.ended is None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2 * self.deps.settings.redis_timeout_s + 1):
                    await self.deps.snapshots.save(self.state)
        if self.deps.snapshots.live.get(self.state.id) is self:
            del self.deps.snapshots.live[self.state.id]
        await self.responses.close()
        await self.transcription.close()

    def handle_now(self, raw: str | bytes) -> bool:
        """The hot path, from the transport's callback (the app package's ``direct_ws.py``) while the
        connection waits for a frame: a well-formed append within the limits is buffered now and ``True``;
        anything else (another event, one to answer with an error) is ``False``, untouched, for
        ``handle``. No task, no future and no ASGI queue per frame (docs/benchmarks.md)."""
        if (
            self.ended is not None
            or self._closed
            or len(raw) > self._max_event_bytes
            or self.turns.audio.behind  # (``handle`` takes it and waits for the VAD: back-pressure)
        ):
            return False
        append = read_append(raw)
        if append is None or not self._bucket.take():  # (a refused take spends nothing: handle() answers)
            return False
        try:
            self.turns.feed(append[0])
        except BadAudio:  # (refused before anything was buffered: handle() answers it, counted once)
            self._bucket.give_back()
            return False
        self._appended_now.add()
        return True

    async def handle(self, raw: str | bytes) -> None:
        """One client frame. Never raises for bad input: it answers with an ``error`` event."""
        event_id: str | None = None
        type_ = "unparsed"
        limit = self.deps.settings.limits.max_event_bytes
        try:
            if len(raw) > limit:
                raise BadEvent(
                    f"event of {len(raw)} bytes is over the {limit}-byte limit", code="event_too_large"
                )
            if not self._bucket.take():
                raise RateLimited("too many events: slow down")
            if (append := read_append(raw)) is not None:  # the hot path: audio, 25 frames a second
                audio, event_id = append
                type_ = APPEND
                self.turns.feed(audio)  # (the VAD hears it after: speech events come on their own task)
                _APPENDED.inc()
                if self.turns.audio.behind:  # back-pressure: the client's next frames wait in TCP
                    await self.turns.audio.caught_up()
                return
            await self.turns.settled()  # after the audio sent before it, as the client sent them
            data = read_client_frame(raw)
            event_id = client_event_id(data)
            event, type_ = validate_client_event(data)
            await self.events.dispatch(event)
            CLIENT_EVENTS.labels(type_, "ok").inc()
        except VoicemeshError as exc:  # a refusal (the client's fault or a store's): its class says how
            CLIENT_EVENTS.labels(type_, exc.code).inc()
            await self._send(error_event(exc, event_id=event_id))
        except OSError:
            raise  # the client went away: the connection handler ends the session
        except Exception as exc:  # a bug must cost this one event, not the session or the process
            log.exception("session %s: event failed", self.state.id)
            CLIENT_EVENTS.labels(type_, "server_error").inc()
            err = InternalError(f"internal error handling the event: {type(exc).__name__}")
            await self._send(error_event(err, event_id=event_id))
