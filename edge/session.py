"""One Realtime session: each client event read, checked and handed to the part of the session
that owns it; a bad event is answered with an ``error`` event and the session carries on.

The parts: ``session_update`` (settings), ``input_turns`` (input audio, VAD, commits),
``conversation`` (items and history) and ``response_lifecycle`` (the response in progress).
Only this session's tasks are touched.
"""

from __future__ import annotations

import logging

from openai.types.realtime import (
    ConversationItemCreateEvent,
    InputAudioBufferAppendEvent,
    InputAudioBufferClearEvent,
    InputAudioBufferCommitEvent,
    ResponseCancelEvent,
    ResponseCreateEvent,
    SessionUpdateEvent,
)
from openai.types.realtime.realtime_client_event import RealtimeClientEvent

from edge.conversation import Conversation
from edge.events import Send, error_event, parse_client_event, server_event
from edge.input_turns import InputTurns
from edge.limits import RateLimited
from edge.metrics import CLIENT_EVENTS
from edge.response_lifecycle import ResponseLifecycle
from edge.services import EdgeServices
from edge.session_update import session_changes, session_object
from edge.state import SessionState
from wire.errors import BadEvent, ProtocolError
from wire.rates import TokenBucket

log = logging.getLogger("voicemesh.edge")


class RealtimeSession:
    def __init__(self, services: EdgeServices, state: SessionState, send: Send) -> None:
        self.services = services
        self.state = state
        self._send = send
        limits = services.settings.limits
        self._bucket = TokenBucket(rate_per_s=limits.events_per_s, burst=limits.events_burst)
        self.conversation = Conversation(
            state, send, max_history=limits.max_history_messages, limits=limits.content
        )
        self.responses = ResponseLifecycle(services, state, self.conversation, send)
        self.turns = InputTurns(
            services.vad.stream(),
            state.turn_detection,
            self.conversation,
            send,
            max_buffer_s=limits.max_buffer_s,
            on_speech_started=self._speech_started,
            on_turn_end=self._turn_ended,
        )

    async def open(self) -> None:
        await self._send(server_event("session.created", session=session_object(self.state)))

    async def close(self) -> None:
        await self.responses.close()

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
            event, event_id, type_ = parse_client_event(raw)
            await self._dispatch(event)
            CLIENT_EVENTS.labels(type_, "ok").inc()
        except ProtocolError as exc:
            CLIENT_EVENTS.labels(type_, exc.code).inc()
            await self._send(error_event(exc, event_id=event_id, param=getattr(exc, "param", None)))
        except OSError:
            raise  # the client went away: the connection handler ends the session
        except Exception as exc:  # a bug must cost this one event, not the session or the process
            log.exception("session %s: event failed", self.state.id)
            CLIENT_EVENTS.labels(type_, "server_error").inc()
            err = ProtocolError(
                f"internal error handling the event: {type(exc).__name__}", code="server_error"
            )
            await self._send(error_event(err, event_id=event_id))

    async def _dispatch(self, event: RealtimeClientEvent) -> None:
        if isinstance(event, InputAudioBufferAppendEvent):
            await self.turns.append(event.audio)
        elif isinstance(event, SessionUpdateEvent):
            await self._update(event)
        elif isinstance(event, InputAudioBufferCommitEvent):
            await self.turns.commit()
        elif isinstance(event, InputAudioBufferClearEvent):
            await self.turns.clear()
        elif isinstance(event, ConversationItemCreateEvent):
            await self.conversation.create_item(event)
        elif isinstance(event, ResponseCreateEvent):
            self.responses.start()
        elif isinstance(event, ResponseCancelEvent):
            if not self.responses.cancel("client_cancelled"):
                raise BadEvent("no response is in progress", code="response_cancel_not_active")
        else:
            raise BadEvent(f"{event.type} is not supported by this server", code="unsupported_event")

    async def _update(self, event: SessionUpdateEvent) -> None:
        for name, value in session_changes(self.state, event.session, self.services.settings).items():
            setattr(self.state, name, value)
        self.turns.configure(self.state.turn_detection)
        await self.services.sessions.save(self.state)
        await self._send(server_event("session.updated", session=session_object(self.state)))

    def _speech_started(self) -> None:
        td = self.state.turn_detection
        if td is not None and td.interrupt_response:
            self.responses.cancel("turn_detected")  # barge-in: stop the answer now

    async def _turn_ended(self) -> None:
        td = self.state.turn_detection
        if td is not None and td.create_response:
            self.responses.start()
