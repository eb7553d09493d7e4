"""One Realtime session: client events in, VAD turns, responses out.

Everything one client can do is handled here and answered with Realtime events; a bad event gets an
``error`` event and the session carries on. Only this session's tasks are touched.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from typing import Any, TypeVar

import msgspec
from openai.types.realtime import (
    ConversationItemCreateEvent,
    InputAudioBufferAppendEvent,
    InputAudioBufferClearEvent,
    InputAudioBufferCommitEvent,
    ResponseCancelEvent,
    ResponseCreateEvent,
    SessionUpdateEvent,
)
from openai.types.realtime.realtime_audio_input_turn_detection import ServerVad
from openai.types.realtime.realtime_client_event import RealtimeClientEvent

from edge.events import error_event, new_id, parse_client_event, server_event
from edge.input_audio import InputAudio
from edge.limits import RateLimited
from edge.response import Response, Send
from edge.services import EdgeServices
from edge.state import SessionState, TurnDetection
from edge.turn_detector import SpeechStarted, SpeechStopped, TurnDetector
from router.api import SessionRouting
from wire.errors import BadAudio, BadEvent, ProtocolError
from wire.rates import TokenBucket
from wire.turn import Message, TurnStart

MIN_COMMIT_MS = 100
log = logging.getLogger("voicemesh.edge")
T = TypeVar("T")


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


class RealtimeSession:
    def __init__(self, services: EdgeServices, state: SessionState, send: Send) -> None:
        self.services = services
        self.state = state
        self._send = send
        limits = services.settings.limits
        self._bucket = TokenBucket(rate_per_s=limits.events_per_s, burst=limits.events_burst)
        self.audio = InputAudio(
            services.vad.stream(),
            TurnDetector(state.turn_detection) if state.turn_detection else None,
            max_buffer_s=limits.max_buffer_s,
        )
        self._speech_item: str | None = None
        self._speech_start_ms = 0
        self._pending_audio: tuple[str, bytes] | None = None
        """The committed user audio item no response has answered yet."""
        self._pending_text: list[tuple[str, str]] = []
        self._last_item: str | None = None
        self.response: Response | None = None
        self._response_task: asyncio.Task[None] | None = None

    # -- lifecycle -----------------------------------------------------------------------------------

    async def open(self) -> None:
        await self._send(server_event("session.created", session=self.session_object()))

    async def close(self) -> None:
        if self._response_task is not None:
            self._response_task.cancel()
            with contextlib.suppress(BaseException):
                await self._response_task

    async def handle(self, raw: str | bytes) -> None:
        """One client frame. Never raises for bad input: it answers with an ``error`` event."""
        event_id: str | None = None
        limit = self.services.settings.limits.max_event_bytes
        try:
            if len(raw) > limit:
                raise BadEvent(
                    f"event of {len(raw)} bytes is over the {limit}-byte limit",
                    code="event_too_large",
                )
            if not self._bucket.take():
                raise RateLimited("too many events: slow down")
            event, event_id, _ = parse_client_event(raw)
            await self._dispatch(event)
        except ProtocolError as exc:
            await self._send(error_event(exc, event_id=event_id))
        except OSError:
            raise  # the client went away: the connection handler ends the session
        except Exception as exc:  # a bug must cost this one event, not the session or the process
            log.exception("session %s: event failed", self.state.id)
            err = ProtocolError(
                f"internal error handling the event: {type(exc).__name__}", code="server_error"
            )
            await self._send(error_event(err, event_id=event_id))

    async def _dispatch(self, event: RealtimeClientEvent) -> None:
        if isinstance(event, InputAudioBufferAppendEvent):
            await self._append(event.audio)
        elif isinstance(event, SessionUpdateEvent):
            await self._update(event)
        elif isinstance(event, InputAudioBufferCommitEvent):
            await self._commit_manual()
        elif isinstance(event, InputAudioBufferClearEvent):
            self.audio.clear()
            await self._send(server_event("input_audio_buffer.cleared"))
        elif isinstance(event, ConversationItemCreateEvent):
            await self._create_item(event)
        elif isinstance(event, ResponseCreateEvent):
            await self._start_response()
        elif isinstance(event, ResponseCancelEvent):
            if self.response is None or self.response.cancelling:
                raise BadEvent("no response is in progress", code="response_cancel_not_active")
            self.response.cancel("client_cancelled")
        else:
            raise BadEvent(f"{event.type} is not supported by this server", code="unsupported_event")

    # -- session settings ----------------------------------------------------------------------------

    def session_object(self) -> dict[str, Any]:
        td = self.state.turn_detection
        return {
            "type": "realtime",
            "id": self.state.id,
            "object": "realtime.session",
            "model": self.state.model or None,
            "instructions": self.state.instructions,
            "output_modalities": self.state.output_modalities,
            "max_output_tokens": self.state.max_output_tokens,
            "audio": {
                "input": {
                    "format": {"type": "audio/pcm", "rate": 24000},
                    "turn_detection": None
                    if td is None
                    else {"type": "server_vad", **msgspec.structs.asdict(td)},
                },
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": self.state.voice or None},
            },
        }

    async def _update(self, event: SessionUpdateEvent) -> None:
        s = event.session
        if s.type != "realtime":
            raise BadEvent("only `realtime` sessions are served here", code="unsupported_session_type")
        if s.instructions is not None:
            self.state.instructions = s.instructions
        if s.output_modalities is not None:
            self.state.output_modalities = list(s.output_modalities)
        if isinstance(s.max_output_tokens, int):
            self.state.max_output_tokens = s.max_output_tokens
        audio = s.audio
        if audio is not None and audio.output is not None:
            if audio.output.format is not None and audio.output.format.type not in (None, "audio/pcm"):
                raise BadAudio(
                    "only audio/pcm (24 kHz PCM16) output is supported", code="unsupported_audio_format"
                )
            if audio.output.voice is not None:
                self.state.voice = (
                    audio.output.voice if isinstance(audio.output.voice, str) else audio.output.voice.id
                )
        if audio is not None and audio.input is not None:
            if audio.input.format is not None and audio.input.format.type not in (None, "audio/pcm"):
                raise BadAudio(
                    "only audio/pcm (24 kHz PCM16) input is supported", code="unsupported_audio_format"
                )
            if "turn_detection" in audio.input.model_fields_set:
                self._set_turn_detection(audio.input.turn_detection)
        await self.services.sessions.save(self.state)
        await self._send(server_event("session.updated", session=self.session_object()))

    def _set_turn_detection(self, td: Any) -> None:
        if td is None:
            self.state.turn_detection = None
            self.audio.detector = None
            return
        defaults = self.services.settings.vad
        current = self.state.turn_detection
        base = current or TurnDetection(
            threshold=defaults.threshold,
            prefix_padding_ms=defaults.prefix_padding_ms,
            silence_duration_ms=defaults.silence_duration_ms,
        )
        vad = td if isinstance(td, ServerVad) else None  # semantic_vad: served by the same Silero VAD
        new = TurnDetection(
            threshold=_given(vad.threshold if vad else None, base.threshold),
            prefix_padding_ms=_given(vad.prefix_padding_ms if vad else None, base.prefix_padding_ms),
            silence_duration_ms=_given(vad.silence_duration_ms if vad else None, base.silence_duration_ms),
            create_response=_given(td.create_response, base.create_response),
            interrupt_response=_given(td.interrupt_response, base.interrupt_response),
        )
        if not 0.0 < new.threshold < 1.0 or new.prefix_padding_ms < 0 or new.silence_duration_ms < 32:
            raise BadEvent(
                "turn_detection: need 0 < threshold < 1, prefix_padding_ms >= 0, silence_duration_ms >= 32",
                code="invalid_value",
            )
        self.state.turn_detection = new
        if self.audio.detector is None:
            self.audio.detector = TurnDetector(new)
        else:
            self.audio.detector.config = new

    # -- input ---------------------------------------------------------------------------------------

    async def _append(self, b64: str) -> None:
        try:
            pcm = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadAudio(f"audio is not valid base64: {exc}") from exc
        for ev in await self.audio.append(pcm):
            if isinstance(ev, SpeechStarted):
                await self._speech_started(ev)
            else:
                await self._speech_stopped(ev)

    async def _speech_started(self, ev: SpeechStarted) -> None:
        self._speech_item = new_id("item")
        await self._send(
            server_event(
                "input_audio_buffer.speech_started",
                audio_start_ms=ev.audio_start_ms,
                item_id=self._speech_item,
            )
        )
        self._speech_start_ms = ev.audio_start_ms
        td = self.state.turn_detection
        if self.response is not None and td is not None and td.interrupt_response:
            self.response.cancel("turn_detected")  # barge-in: stop the answer now

    async def _speech_stopped(self, ev: SpeechStopped) -> None:
        item_id = self._speech_item or new_id("item")
        self._speech_item = None
        await self._send(
            server_event("input_audio_buffer.speech_stopped", audio_end_ms=ev.audio_end_ms, item_id=item_id)
        )
        pcm = self.audio.take(self._speech_start_ms, ev.audio_end_ms)
        await self._commit(item_id, pcm)
        td = self.state.turn_detection
        if td is not None and td.create_response:
            await self._start_response()

    async def _commit_manual(self) -> None:
        if self.audio.buffered_ms < MIN_COMMIT_MS:
            raise BadAudio(
                f"buffer too small: need {MIN_COMMIT_MS} ms of audio or more, have {self.audio.buffered_ms}",
                code="input_audio_buffer_commit_empty",
            )
        await self._commit(new_id("item"), self.audio.take())

    async def _commit(self, item_id: str, pcm16k: bytes) -> None:
        await self._send(
            server_event("input_audio_buffer.committed", item_id=item_id, previous_item_id=self._last_item)
        )
        item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        await self._send(server_event("conversation.item.added", item=item, previous_item_id=self._last_item))
        await self._send(server_event("conversation.item.done", item=item, previous_item_id=self._last_item))
        self._last_item = item_id
        self._pending_audio = (item_id, pcm16k)

    async def _create_item(self, event: ConversationItemCreateEvent) -> None:
        item = event.item
        if item.type != "message":
            raise BadEvent(
                f"conversation items of type {item.type!r} are not supported", code="unsupported_item"
            )
        texts = [getattr(c, "text", None) or getattr(c, "transcript", None) for c in item.content]
        text = " ".join(t for t in texts if t)
        if not text:
            raise BadEvent(
                "a message item needs text content (input_text / text)",
                code="invalid_value",
            )
        item_id = item.id or new_id("item")
        body = item.model_dump(exclude_none=True) | {
            "id": item_id,
            "object": "realtime.item",
            "status": "completed",
        }
        if item.role == "user":
            self._pending_text.append((item_id, text))
        else:
            self._remember(Message(role=item.role, content=text))
        await self._send(server_event("conversation.item.added", item=body, previous_item_id=self._last_item))
        await self._send(server_event("conversation.item.done", item=body, previous_item_id=self._last_item))
        self._last_item = item_id

    def _remember(self, msg: Message) -> None:
        history = self.state.history
        history.append(msg)
        del history[: max(0, len(history) - self.services.settings.limits.max_history_messages)]

    # -- responses -----------------------------------------------------------------------------------

    async def _start_response(self) -> None:
        if self.response is not None:
            raise BadEvent(
                "a response is already in progress", code="conversation_already_has_active_response"
            )
        audio_item, audio = self._pending_audio or (None, b"")
        texts = self._pending_text
        if not audio and not texts:
            raise BadEvent(
                "nothing to respond to: commit audio or create a user message first", code="no_input"
            )
        for _, text in texts[:-1]:
            self._remember(Message(role="user", content=text))
        reply_to: str | None = texts[-1][1] if texts and not audio else None
        if audio and texts:
            for _, t in texts:
                self._remember(Message(role="user", content=t))
        user_item = audio_item or texts[-1][0]
        self._pending_audio, self._pending_text = None, []
        start = TurnStart(
            turn_id=new_id("turn"),
            voice=self.state.voice,
            instructions=self.state.instructions,
            history=list(self.state.history),
            text=reply_to,
            transcript=None,
            max_output_tokens=self.state.max_output_tokens,
            temperature=self.state.temperature,
        )
        if reply_to is not None:
            self._remember(Message(role="user", content=reply_to))
        routing = SessionRouting(session_id=self.state.id)
        events = self.services.router.run_turn(routing, start, audio or None)
        response = Response(
            send=self._send,
            events=events,
            fallback=self.services.fallback,
            hold_message=self.services.settings.hold_message,
            user_item_id=user_item if audio_item else None,
            voice=self.state.voice,
            lead_s=self.services.settings.playback_lead_s,
            relay_times=self.services.relay_times,
        )
        if audio_item:
            response.on_transcript = lambda t: self._transcribed(audio_item, t, len(audio))
        self.response = response
        self._response_task = asyncio.create_task(self._run_response(response), name=response.id)

    async def _transcribed(self, item_id: str, transcript: str, audio_bytes: int) -> None:
        self._remember(Message(role="user", content=transcript))
        await self._send(
            server_event(
                "conversation.item.input_audio_transcription.completed",
                item_id=item_id,
                content_index=0,
                transcript=transcript,
                usage={"type": "duration", "seconds": round(audio_bytes / 32000, 3)},
            )
        )

    async def _run_response(self, response: Response) -> None:
        try:
            result = await response.run()
            if result.heard_text:
                self._remember(Message(role="assistant", content=result.heard_text))
            await self.services.sessions.save(self.state)
        finally:
            if self.response is response:
                self.response = None
