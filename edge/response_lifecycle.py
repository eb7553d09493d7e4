"""One session's response slot: start a response on the conversation's pending input, cancel it,
and when it ends put what was heard into the conversation and save the session.

A session has at most one response at a time; its task is this session's only background work.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from edge.conversation import Conversation, UserTurn
from edge.events import Send, new_id
from edge.metrics import RESPONSES
from edge.response import CancelReason, Response
from edge.services import EdgeServices
from edge.state import SessionState
from router.api import SessionRouting
from wire.errors import BadEvent
from wire.turn import TurnStart


class ResponseLifecycle:
    def __init__(
        self, services: EdgeServices, state: SessionState, conversation: Conversation, send: Send
    ) -> None:
        self._services = services
        self._state = state
        self._conversation = conversation
        self._send = send
        self.response: Response | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """``response.create`` (or the end of a VAD turn): answer the pending input."""
        if self.response is not None:
            raise BadEvent(
                "a response is already in progress", code="conversation_already_has_active_response"
            )
        turn = self._conversation.take_turn()
        state, services = self._state, self._services
        start = TurnStart(
            turn_id=new_id("turn"),
            voice=state.voice,
            instructions=state.instructions,
            history=turn.history,
            text=turn.text,
            transcript=None,
            max_output_tokens=state.max_output_tokens,
            temperature=state.temperature,
        )
        events = services.router.run_turn(SessionRouting(session_id=state.id), start, turn.audio or None)
        response = Response(
            send=self._send,
            events=events,
            fallback=services.fallback,
            hold_message=services.settings.hold_message,
            user_item_id=turn.audio_item_id,
            voice=state.voice,
            lead_s=services.settings.playback_lead_s,
            relay_times=services.relay_times,
            on_transcript=self._transcript_writer(turn),
        )
        self.response = response
        self._task = asyncio.create_task(self._run(response), name=response.id)

    def cancel(self, reason: CancelReason) -> bool:
        """Stop the response in progress; ``False`` when there is none (or it is already stopping)."""
        if self.response is None or self.response.cancelling:
            return False
        self.response.cancel(reason)
        return True

    async def close(self) -> None:
        """The session is closing: stop the response without finishing it."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task

    def _transcript_writer(self, turn: UserTurn) -> Callable[[str], Awaitable[None]] | None:
        if turn.audio_item_id is None:
            return None
        return lambda transcript: self._conversation.transcribed(turn, transcript)

    async def _run(self, response: Response) -> None:
        try:
            result = await response.run()
            self._conversation.answered(result.heard_text)
        finally:
            # Free the slot as ``response.done`` goes out (no await between): a client may send
            # ``response.create`` as soon as it reads it.
            if self.response is response:
                self.response = None
        RESPONSES.labels(result.status, result.metadata.get("served_by", "region")).inc()
        await self._services.sessions.save(self._state)
