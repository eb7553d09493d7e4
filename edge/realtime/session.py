"""One Realtime session: each client event read, checked and handed to the part of the session
that owns it; a bad event is answered with an ``error`` event and the session carries on.

The parts: ``session_update`` (settings), ``input_turns`` (input audio, VAD, commits),
``conversation`` (items and history) and ``response_lifecycle`` (the response in progress).
Only this session's tasks are touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from openai.types.realtime import (
    ConversationItemCreateEvent,
    ConversationItemDeleteEvent,
    ConversationItemRetrieveEvent,
    ConversationItemTruncateEvent,
    InputAudioBufferAppendEvent,
    InputAudioBufferClearEvent,
    InputAudioBufferCommitEvent,
    OutputAudioBufferClearEvent,
    ResponseCancelEvent,
    ResponseCreateEvent,
    SessionUpdateEvent,
)
from openai.types.realtime.realtime_client_event import RealtimeClientEvent

from edge.app.services import EdgeServices
from edge.audio.turn_audio import TurnAudio
from edge.realtime.conversation import Conversation
from edge.realtime.input_turns import InputTurns
from edge.realtime.response_lifecycle import ResponseLifecycle
from edge.realtime.response_params import response_params
from edge.realtime.resume import (
    VENDOR_RESUME_REQUIRED,
    VENDOR_RESUMED,
    SessionKeeper,
    continue_answer,
    replay,
    restore,
    snapshot_of,
)
from edge.realtime.session_snapshot import SessionSnapshot
from edge.realtime.session_update import session_changes, session_object
from edge.realtime.transcription import InputTranscription
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
from edge.shared.limits import check_text
from edge.shared.metrics import CLIENT_EVENTS, DIRECT_FRAMES, Tally
from edge.shared.state import SessionState
from edge.tenancy.auth import Principal
from edge.tenancy.session_tenancy import vendor_session
from wire.errors import BadAudio, BadEvent, ProtocolError, VoicemeshError
from wire.rates import TokenBucket
from wire.voices import CustomVoice

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
        services: EdgeServices,
        state: SessionState,
        send: Send,
        close_socket: CloseSocket | None = None,
        *,
        lease: str | None = None,
        policy: KeyPolicy = DEFAULT_POLICY,
        hooks: SessionHooks | None = None,
    ) -> None:
        self.services = services
        self.state = state
        self.policy = policy
        """The connection's key policy: which voices it may use (``edge/shared/key_policy.py``)."""
        self._send = send
        self._close_socket = close_socket
        self.lease = lease or secrets.token_hex(12)
        """This connection's claim on the session (``edge/realtime/session_snapshot.py``)."""
        self.ended: str | None = None
        """Why the edge ended the connection (``session_taken_over``, ``edge_draining``)."""
        self._speaking = False
        """The server VAD heard speech start and not yet end: a turn is being spoken."""
        self._closed = False
        limits = services.settings.limits
        self._bucket = TokenBucket(rate_per_s=limits.events_per_s, burst=limits.events_burst)
        self._max_event_bytes = limits.max_event_bytes
        self._appended_now = Tally(_APPENDED, DIRECT_FRAMES)
        """Appends taken by ``handle_now``, counted in batches (flushed at ``close``)."""
        self.conversation = Conversation(
            state, send, max_history=limits.max_history_messages, limits=limits.content
        )
        self.transcription = InputTranscription(services, state, self.conversation, send)
        self.responses = ResponseLifecycle(services, state, self.conversation, send, self.transcription)
        self._hooks = hooks
        if hooks is not None:
            self.responses.on_done = hooks.response_done
        self.turns = InputTurns(
            services.vad.stream(),
            state.turn_detection,
            self.conversation,
            send,
            max_buffer_s=limits.max_buffer_s,
            on_speech_started=self._speech_started,
            on_turn_end=self._turn_ended,
            on_pause=self._speech_paused,
            on_resume=self.responses.drop_speculation,
            run_events=self._speech_events,
            pause_ms=services.settings.vad.speculate_after_ms,
            audio_format=state.input_audio_format,
        )
        self._keeper = SessionKeeper(
            services.sessions, state, self.responses, self.lease, self.taken_over,
            interval_s=services.settings.resume.snapshot_interval_s,
        )  # fmt: skip

    async def open(self, resumed: SessionSnapshot | None = None) -> None:
        """``session.created``; for a resumed session (``edge/realtime/resume.py``) then its conversation and
        the rest of an answer cut short."""
        self.services.sessions.live[self.state.id] = self
        if resumed is None:
            await self.services.sessions.save(self.state)
        else:
            items = restore(resumed, self.conversation)
        await self._send(server_event("session.created", session=self._session_object()))
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
        if self.services.sessions.live.get(self.state.id) is self:
            del self.services.sessions.live[self.state.id]
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
                    if self.responses.response is None and not self._speaking:
                        break
                    await asyncio.sleep(0.05)
        self.ended = "edge_draining"
        await self._keeper.aclose()
        await self.services.sessions.save(self.state)
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
                async with asyncio.timeout(2 * self.services.settings.redis_timeout_s + 1):
                    await self.services.sessions.save(self.state)
        if self.services.sessions.live.get(self.state.id) is self:
            del self.services.sessions.live[self.state.id]
        await self.responses.close()
        await self.transcription.close()

    def handle_now(self, raw: str | bytes) -> bool:
        """The hot path, from the transport's callback (``edge/app/direct_ws.py``) while the connection
        waits for a frame: a well-formed append within the limits is buffered now and ``True``;
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
        limit = self.services.settings.limits.max_event_bytes
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
            await self._dispatch(event)
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

    async def _speech_events(self, work: Awaitable[None]) -> None:
        """The speech events the VAD's answers bring (``InputTurns``), on their own task: failures
        are answered as a client event's are, with an ``error`` event."""
        try:
            await work
            return
        except OSError:
            return  # the client went away: the connection handler ends the session
        except VoicemeshError as exc:
            error = exc
        except Exception as exc:
            log.exception("session %s: speech events failed", self.state.id)
            error = InternalError(f"internal error handling speech: {type(exc).__name__}")
        with contextlib.suppress(OSError):  # (nobody awaits this task: nothing may escape it)
            await self._send(error_event(error))

    async def _dispatch(self, event: RealtimeClientEvent) -> None:
        if isinstance(event, InputAudioBufferAppendEvent):
            await self.turns.append(event.audio)
        elif isinstance(event, SessionUpdateEvent):
            await self._update(event)
        elif isinstance(event, InputAudioBufferCommitEvent):
            await self.turns.commit()
            await self._transcribe_pending()  # a later response.create may still take the audio
        elif isinstance(event, InputAudioBufferClearEvent):
            await self.turns.clear()
        elif isinstance(event, ConversationItemCreateEvent):
            await self.conversation.create_item(event)
            await self.services.sessions.save(self.state)
        elif isinstance(event, ConversationItemTruncateEvent):
            await self._truncate(event)
        elif isinstance(event, ConversationItemDeleteEvent):
            await self.conversation.delete(event.item_id)
            self.responses.cancel_item(event.item_id)
            await self.services.sessions.save(self.state)
        elif isinstance(event, ConversationItemRetrieveEvent):
            await self.conversation.retrieve(event.item_id)
        elif isinstance(event, OutputAudioBufferClearEvent):
            await self._clear_output_audio()
        elif isinstance(event, ResponseCreateEvent):
            out = event.response.audio.output if event.response and event.response.audio else None
            custom = await self._custom_voice(out.voice if out else None, "response.audio.output.voice")
            params = response_params(
                event.response, self.state, self.services.settings, voices=self.policy.voices, custom=custom
            )
            self.responses.start(params)
            await self.services.sessions.save(self.state)  # the turn in flight: resumable from now
        elif isinstance(event, ResponseCancelEvent):
            if not self.responses.cancel("client_cancelled"):
                raise BadEvent("no response is in progress", code="response_cancel_not_active")
        else:
            raise BadEvent(f"{event.type} is not supported by this server", code="unsupported_event")

    async def _truncate(self, event: ConversationItemTruncateEvent) -> None:
        """Checked first (a bad truncate changes nothing), then a response still playing the item
        is stopped like a cancel (Pipecat truncates at barge-in), then its transcript is cut."""
        item = self.conversation.truncatable(event)
        await self.responses.stop_item(item.id)
        await self.conversation.truncate(item, event.audio_end_ms)
        await self.services.sessions.save(self.state)

    async def _clear_output_audio(self) -> None:
        """``output_audio_buffer.clear``: WebRTC/SIP only in OpenAI, whose WebSocket refuses it. The
        edge paces its audio like OpenAI's WebRTC output buffer (``edge/responses/playback.py``), so it does
        what WebRTC does: stop the audio being played and answer ``output_audio_buffer.cleared``
        (no error: Pipecat ends the session on any error but two)."""
        response_id = await self.responses.clear_audio()
        if response_id is None:
            raise BadEvent("no response audio to clear in this session", code="invalid_value")
        await self._send(server_event("output_audio_buffer.cleared", response_id=response_id))

    async def _custom_voice(self, asked: object, param: str) -> CustomVoice | None:
        """The definition of a custom voice the client named (``{"id": ...}``, or a name that is
        not built in) from the voice library; ``None`` for a built-in voice (checked as before)."""
        name = asked if isinstance(asked, str) else getattr(asked, "id", None)
        if not isinstance(name, str) or not name or name in self.services.settings.voices.names():
            return None
        check_text(name, param, self.services.settings.limits.content.max_voice_chars)
        ref: str | dict[str, Any] = name if isinstance(asked, str) else {"id": name}
        who = Principal(self.state.key_id, "session", policy=self.policy)  # whose voices it may use
        return await self.services.voice_library.resolve(ref, who, param=param)

    async def _update(self, event: SessionUpdateEvent) -> None:
        out = getattr(event.session.audio, "output", None)  # a transcription session has none
        custom = await self._custom_voice(getattr(out, "voice", None), "session.audio.output.voice")
        changes = session_changes(
            self.state, event.session, self.services.settings, voices=self.policy.voices, custom=custom
        )
        for name, value in changes.items():
            setattr(self.state, name, value)
        self.turns.configure(self.state.turn_detection, self.state.input_audio_format)
        await self.services.sessions.save(self.state)
        await self._send(server_event("session.updated", session=self._session_object()))

    def _session_object(self) -> dict[str, Any]:
        """The API's session, plus ``voicemesh``: the residency, priority class and no-region rule
        its turns are served under (``edge/tenancy/session_tenancy.py``)."""
        return {**session_object(self.state), "voicemesh": vendor_session(self.state)}

    def _speech_started(self) -> None:
        self._speaking = True
        td = self.state.turn_detection
        if td is not None and td.interrupt_response:
            self.responses.cancel("turn_detected")  # barge-in: stop the answer now

    def _speech_paused(self, audio: TurnAudio) -> None:
        """A pause that may be the end of the turn: start its answer now
        (``edge/realtime/speculation.py``)."""
        td = self.state.turn_detection
        if td is not None and td.create_response:
            self.responses.speculate(audio.pcm16k())

    async def _turn_ended(self) -> None:
        self._speaking = False
        td = self.state.turn_detection
        if td is None or not td.create_response:
            await self._transcribe_pending()
            return
        try:
            self.responses.start(speech_stopped_at=self.turns.stopped_at)
        except ProtocolError:
            await self._transcribe_pending()  # no response takes the audio now: still transcribe it
            raise
        await self.services.sessions.save(self.state)  # the turn in flight: resumable from now

    async def _transcribe_pending(self) -> None:
        """Input transcription (when on) of the committed audio no response has taken."""
        # (``on`` first: the pending audio is resampled when read, ``edge/audio/turn_audio.py``)
        if self.transcription.on and (pending := self.conversation.pending_audio) is not None:
            await self.transcription.request(*pending)
