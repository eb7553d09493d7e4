"""A session's client events past the hot path (``edge/realtime/session.py`` reads and checks
them): each handed to the part of the session that owns it, the session saved at its safe points
(settings changed, an item changed, a response started: resumable from then on).
"""

from __future__ import annotations

from typing import Any

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

from edge.realtime.conversation import Conversation
from edge.realtime.input_turns import InputTurns
from edge.realtime.response_lifecycle import ResponseLifecycle
from edge.realtime.response_params import response_params
from edge.realtime.session_deps import SessionDeps
from edge.realtime.session_update import session_changes, session_object
from edge.realtime.transcription import InputTranscription
from edge.shared.events import Send, server_event
from edge.shared.key_policy import KeyPolicy
from edge.shared.limits import check_text
from edge.shared.state import SessionState
from edge.tenancy.auth import Principal
from edge.tenancy.session_tenancy import vendor_session
from wire.errors import BadEvent
from wire.voices import CustomVoice


class ClientEvents:
    def __init__(
        self,
        deps: SessionDeps,
        state: SessionState,
        send: Send,
        policy: KeyPolicy,
        *,
        conversation: Conversation,
        responses: ResponseLifecycle,
        transcription: InputTranscription,
        turns: InputTurns,
    ) -> None:
        self._deps = deps
        self._state = state
        self._send = send
        self._policy = policy
        self._conversation = conversation
        self._responses = responses
        self._transcription = transcription
        self._turns = turns

    async def dispatch(self, event: RealtimeClientEvent) -> None:
        save = self._deps.snapshots.save
        if isinstance(event, InputAudioBufferAppendEvent):
            await self._turns.append(event.audio)
        elif isinstance(event, SessionUpdateEvent):
            await self._update(event)
        elif isinstance(event, InputAudioBufferCommitEvent):
            await self._turns.commit()
            await self._transcription.request_pending()  # a later response.create may still take the audio
        elif isinstance(event, InputAudioBufferClearEvent):
            await self._turns.clear()
        elif isinstance(event, ConversationItemCreateEvent):
            await self._conversation.create_item(event)
            await save(self._state)
        elif isinstance(event, ConversationItemTruncateEvent):
            await self._truncate(event)
        elif isinstance(event, ConversationItemDeleteEvent):
            await self._conversation.delete(event.item_id)
            self._responses.cancel_item(event.item_id)
            await save(self._state)
        elif isinstance(event, ConversationItemRetrieveEvent):
            await self._conversation.retrieve(event.item_id)
        elif isinstance(event, OutputAudioBufferClearEvent):
            await self._clear_output_audio()
        elif isinstance(event, ResponseCreateEvent):
            out = event.response.audio.output if event.response and event.response.audio else None
            custom = await self._custom_voice(out.voice if out else None, "response.audio.output.voice")
            params = response_params(
                event.response, self._state, self._deps.settings, voices=self._policy.voices, custom=custom
            )
            self._responses.start(params)
            await save(self._state)  # the turn in flight: resumable from now
        elif isinstance(event, ResponseCancelEvent):
            if not self._responses.cancel("client_cancelled"):
                raise BadEvent("no response is in progress", code="response_cancel_not_active")
        else:
            raise BadEvent(f"{event.type} is not supported by this server", code="unsupported_event")

    def session_object(self) -> dict[str, Any]:
        """The API's session, plus ``voicemesh``: the residency, priority class and no-region rule
        its turns are served under (``edge/tenancy/session_tenancy.py``)."""
        return {**session_object(self._state), "voicemesh": vendor_session(self._state)}

    async def _truncate(self, event: ConversationItemTruncateEvent) -> None:
        """Checked first (a bad truncate changes nothing), then a response still playing the item
        is stopped like a cancel (Pipecat truncates at barge-in), then its transcript is cut."""
        item = self._conversation.truncatable(event)
        await self._responses.stop_item(item.id)
        await self._conversation.truncate(item, event.audio_end_ms)
        await self._deps.snapshots.save(self._state)

    async def _clear_output_audio(self) -> None:
        """``output_audio_buffer.clear``: WebRTC/SIP only in OpenAI, whose WebSocket refuses it. The
        edge paces its audio like OpenAI's WebRTC output buffer (``edge/responses/playback.py``), so it does
        what WebRTC does: stop the audio being played and answer ``output_audio_buffer.cleared``
        (no error: Pipecat ends the session on any error but two)."""
        response_id = await self._responses.clear_audio()
        if response_id is None:
            raise BadEvent("no response audio to clear in this session", code="invalid_value")
        await self._send(server_event("output_audio_buffer.cleared", response_id=response_id))

    async def _custom_voice(self, asked: object, param: str) -> CustomVoice | None:
        """The definition of a custom voice the client named (``{"id": ...}``, or a name that is
        not built in) from the voice library; ``None`` for a built-in voice (checked as before)."""
        name = asked if isinstance(asked, str) else getattr(asked, "id", None)
        if not isinstance(name, str) or not name or name in self._deps.settings.voices.names():
            return None
        check_text(name, param, self._deps.settings.limits.content.max_voice_chars)
        ref: str | dict[str, Any] = name if isinstance(asked, str) else {"id": name}
        who = Principal(self._state.key_id, "session", policy=self._policy)  # whose voices it may use
        return await self._deps.voices.resolve(ref, who, param=param)

    async def _update(self, event: SessionUpdateEvent) -> None:
        out = getattr(event.session.audio, "output", None)  # a transcription session has none
        custom = await self._custom_voice(getattr(out, "voice", None), "session.audio.output.voice")
        changes = session_changes(
            self._state, event.session, self._deps.settings, voices=self._policy.voices, custom=custom
        )
        for name, value in changes.items():
            setattr(self._state, name, value)
        self._turns.configure(self._state.turn_detection, self._state.input_audio_format)
        await self._deps.snapshots.save(self._state)
        await self._send(server_event("session.updated", session=self.session_object()))


__all__ = ["ClientEvents"]
