"""One session's conversation: its items, the ``previous_item_id`` chain, and the history the
router gets with each turn.

The history (``SessionState.history``) is written here only, by ``_remember``, which also trims it
to the edge's limit; each turn gets the newest part of it that fits the model's context
(``edge.limits.fit_history``). User input waits here (committed audio, created user messages) until a
response takes it with ``take_turn``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openai.types.realtime import ConversationItemCreateEvent

from edge.events import Send, new_id, server_event
from edge.limits import InvalidParam, check_text, fit_history
from edge.settings import ContentLimits
from edge.state import SessionState
from wire.errors import BadEvent
from wire.turn import Message


@dataclass(frozen=True, slots=True)
class UserTurn:
    """What one response answers."""

    history: list[Message]
    """The conversation before this turn."""
    audio_item_id: str | None = None
    """The committed audio item (its transcript arrives during the response)."""
    audio: bytes = b""
    """16 kHz PCM16 of that item."""
    text: str | None = None
    """The user's message, when the turn is text only."""


class Conversation:
    def __init__(self, state: SessionState, send: Send, *, max_history: int, limits: ContentLimits) -> None:
        self._state = state
        self._send = send
        self._max_history = max_history
        self._limits = limits
        self.last_item_id: str | None = None
        self._pending_audio: tuple[str, bytes] | None = None
        """The committed user audio item no response has answered yet."""
        self._pending_text: list[tuple[str, str]] = []

    async def add_user_audio(self, item_id: str, pcm16k: bytes) -> None:
        """A committed input audio buffer becomes a user item."""
        item = {
            "id": item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "user",
            "status": "completed",
            "content": [{"type": "input_audio", "transcript": None}],
        }
        await self._added(item_id, item)
        self._pending_audio = (item_id, pcm16k)

    async def create_item(self, event: ConversationItemCreateEvent) -> None:
        """``conversation.item.create``: user and assistant text messages.

        ``system`` items are refused: the system prompt is the region's and the session's
        ``instructions``, which are bounded; a client-written one would override both."""
        item = event.item
        if item.type != "message":
            raise BadEvent(
                f"conversation items of type {item.type!r} are not supported", code="unsupported_item"
            )
        if item.role == "system":
            raise InvalidParam(
                "system messages cannot be added by a client: set the session's `instructions`",
                param="item.role",
            )
        texts = [getattr(c, "text", None) or getattr(c, "transcript", None) for c in item.content]
        text = " ".join(t for t in texts if t)
        if not text:
            raise BadEvent("a message item needs text content (input_text / text)", code="invalid_value")
        check_text(text, "item.content", self._limits.max_text_chars)
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
        await self._added(item_id, body)

    def take_turn(self) -> UserTurn:
        """The input a new response answers, with the history that fits the model's context beside
        the instructions, the turn and the answer (oldest messages left out first). Raises
        ``BadEvent`` when there is no input, ``InvalidParam`` when even no history does not fit;
        either way the pending input stays."""
        audio_item, audio = self._pending_audio or (None, b"")
        texts = [text for _, text in self._pending_text]
        if not audio and not texts:
            raise BadEvent(
                "nothing to respond to: commit audio or create a user message first", code="no_input"
            )
        # With audio, every message goes before it; without, the last message is the turn's text.
        reply_to = None if audio else texts.pop()
        state = self._state
        history = fit_history(
            [*state.history, *(Message(role="user", content=text) for text in texts)],
            fixed=(state.instructions, reply_to or ""),
            max_output_tokens=state.max_output_tokens,
            limits=self._limits,
        )
        self._pending_audio, self._pending_text = None, []
        for text in texts:
            self._remember(Message(role="user", content=text))
        turn = UserTurn(history=history, audio_item_id=audio_item, audio=audio, text=reply_to)
        if reply_to is not None:
            self._remember(Message(role="user", content=reply_to))
        return turn

    async def transcribed(self, turn: UserTurn, transcript: str) -> None:
        """The region heard the turn's audio: its item gets the transcript."""
        self._remember(Message(role="user", content=transcript))
        await self._send(
            server_event(
                "conversation.item.input_audio_transcription.completed",
                item_id=turn.audio_item_id,
                content_index=0,
                transcript=transcript,
                usage={"type": "duration", "seconds": round(len(turn.audio) / 32000, 3)},
            )
        )

    def answered(self, heard_text: str) -> None:
        """What the user heard of a response (all of it, or up to a barge-in)."""
        if heard_text:
            self._remember(Message(role="assistant", content=heard_text))

    async def _added(self, item_id: str, item: dict[str, Any]) -> None:
        previous = self.last_item_id
        await self._send(server_event("conversation.item.added", item=item, previous_item_id=previous))
        await self._send(server_event("conversation.item.done", item=item, previous_item_id=previous))
        self.last_item_id = item_id

    def _remember(self, msg: Message) -> None:
        history = self._state.history
        history.append(msg)
        del history[: max(0, len(history) - self._max_history)]
