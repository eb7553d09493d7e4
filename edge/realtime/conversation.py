"""One session's conversation: its items in order, the ``previous_item_id`` chain, the item events
(``conversation.item.create/delete/retrieve/truncate``), and the history the router gets with each
turn.

Every item (user input, a response's assistant item) has its place in one ordered list, so each
``previous_item_id`` names the item really before it. The history (``SessionState.history``) is
derived from that list here only (``_changed``), trimmed to the edge's limit; each turn gets the
newest part of it that fits the model's context (``edge.shared.limits.fit_history``). User input waits
(``Item.pending``) until a response takes it with ``take_turn``. An assistant item keeps its
``Heard`` record, so a truncation keeps only the clauses heard by the client's ``audio_end_ms``.

Function calling: a response's calls become ``function_call`` items after its assistant item
(``add_call``); a client's ``function_call_output`` item (for a call it knows) is input like a user
message, and a response to it answers from the history, where calls are an assistant message's
``tool_calls`` and outputs ``tool`` messages (OpenAI's chat shape, ``wire.turn.Message``).

Error codes are the OpenAI API's, where clients match on them (Pipecat:
``item_retrieve_invalid_item_id``; truncation races: ``item_truncate_invalid_item_id`` and
``invalid_value`` "already shorter than").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from openai.types.realtime import ConversationItemCreateEvent, ConversationItemTruncateEvent

from edge.audio.turn_audio import TurnAudio
from edge.responses.response_tools import MAX_TOOL_NAME_CHARS, call_item
from edge.shared.events import Send, new_id, server_event
from edge.shared.limits import InvalidParam, check_text, fit_history
from edge.shared.settings import ContentLimits
from edge.shared.state import SessionState
from edge.turns.heard import Heard
from wire.errors import BadEvent
from wire.turn import Message, ToolCall

ItemStatus = Literal["completed", "incomplete", "in_progress"]
ItemType = Literal["message", "function_call", "function_call_output"]


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
    transcript: str | None = None
    """The audio's transcript, when input transcription already made it (the region skips STT)."""


@dataclass(eq=False)
class Item:
    """One conversation item (a ``message``, ``function_call`` or ``function_call_output``) and what
    the model sees of it."""

    id: str
    role: Literal["user", "assistant"]
    content: list[dict[str, Any]]
    """The API's content parts as clients see them."""
    text: str | None
    """Its text, or its audio's transcript; ``None`` while not known (not in history then)."""
    status: ItemStatus = "completed"
    pending: bool = False
    """User input that no response has taken yet."""
    audio: Heard | None = None
    """An assistant item's audio as sent: what a truncation cuts."""
    type: ItemType = "message"
    call: ToolCall | None = None
    """A ``function_call`` item's call (its ``id`` is the ``call_id``), or the call a
    ``function_call_output`` answers (whose ``text`` is the output)."""

    def body(self) -> dict[str, Any]:
        """The ``realtime.item`` object (without audio bytes: the edge does not keep them)."""
        call = self.call
        if self.type == "function_call" and call is not None:
            return call_item(self.id, call.id, call.name, call.arguments, self.status)
        if self.type == "function_call_output" and call is not None:
            return {
                "id": self.id,
                "object": "realtime.item",
                "type": "function_call_output",
                "status": self.status,
                "call_id": call.id,
                "output": self.text or "",
            }
        content = self.content
        if self.role == "assistant" and self.audio is not None:
            heard = self.text if self.text is not None else self.audio.heard_text
            content = [{"type": "output_audio", "transcript": heard}]
        elif self.content and self.content[0].get("type") == "input_audio":
            content = [{"type": "input_audio", "transcript": self.text}]
        return {
            "id": self.id,
            "object": "realtime.item",
            "type": "message",
            "role": self.role,
            "status": self.status,
            "content": content,
        }


class Conversation:
    def __init__(self, state: SessionState, send: Send, *, max_history: int, limits: ContentLimits) -> None:
        self._state = state
        self._send = send
        self._max_history = max_history
        self._limits = limits
        self._items: list[Item] = []
        self._pending_audio: tuple[str, TurnAudio] | None = None
        """The committed user audio item no response has answered yet (resampled for STT only when
        a response or transcription takes it: ``edge/audio/turn_audio.py``)."""

    @property
    def last_item_id(self) -> str | None:
        """The newest item: the ``previous_item_id`` of the next one."""
        return self._items[-1].id if self._items else None

    @property
    def items(self) -> list[Item]:
        """The items in order (a copy): what a session snapshot keeps (``edge/realtime/resume.py``)."""
        return list(self._items)

    def restore(self, items: list[Item]) -> None:
        """A resumed session's items (``edge/realtime/resume.py``), before any event of this connection."""
        self._items = list(items)
        self._changed()

    @property
    def pending_audio(self) -> tuple[str, bytes] | None:
        """The committed user audio no response has taken yet: ``(item id, 16 kHz PCM16)``."""
        pending = self._pending_audio
        return None if pending is None else (pending[0], pending[1].pcm16k())

    def find(self, item_id: str) -> Item | None:
        return next((item for item in self._items if item.id == item_id), None)

    async def add_user_audio(self, item_id: str, audio: TurnAudio) -> None:
        """A committed input audio buffer becomes a user item."""
        content = [{"type": "input_audio", "transcript": None}]
        await self._added(Item(item_id, "user", content, None, pending=True))
        self._pending_audio = (item_id, audio)

    async def create_item(self, event: ConversationItemCreateEvent) -> None:
        """``conversation.item.create``: user and assistant text messages, appended or put after
        ``previous_item_id`` (``"root"``: first).

        ``system`` items are refused: the system prompt is the region's and the session's
        ``instructions``, which are bounded; a client-written one would override both."""
        item = event.item
        if item.type in ("function_call", "function_call_output"):
            await self._create_function_item(event)
            return
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
        if self.find(item_id) is not None:
            raise InvalidParam(f"Item with id '{item_id}' already exists.", param="item.id")
        position = self._position(event.previous_item_id)
        content = item.model_dump(exclude_none=True)["content"]
        new = Item(item_id, item.role, content, text, pending=item.role == "user")
        await self._added(new, position)

    async def _create_function_item(self, event: ConversationItemCreateEvent) -> None:
        """A client's ``function_call_output`` (the result of a call it was given, input the next
        response answers) or ``function_call`` (a call it adds to the history itself)."""
        item = event.item
        item_id = item.id or new_id("item")
        if self.find(item_id) is not None:
            raise InvalidParam(f"Item with id '{item_id}' already exists.", param="item.id")
        call_id = getattr(item, "call_id", None)
        if not call_id:
            raise InvalidParam("a function item needs a call_id", param="item.call_id")
        check_text(call_id, "item.call_id", MAX_TOOL_NAME_CHARS)
        position = self._position(event.previous_item_id)
        if item.type == "function_call":
            check_text(item.name, "item.name", MAX_TOOL_NAME_CHARS)
            check_text(item.arguments, "item.arguments", self._limits.max_text_chars)
            call = ToolCall(id=call_id, name=item.name, arguments=item.arguments)
            await self._added(Item(item_id, "assistant", [], None, type="function_call", call=call), position)
            return
        output = getattr(item, "output", "")
        check_text(output, "item.output", self._limits.max_text_chars)
        made = next(
            (i.call for i in self._items if i.type == "function_call" and i.call and i.call.id == call_id),
            None,
        )
        if made is None:
            raise InvalidParam(
                f"no function_call with call_id '{call_id}' in this conversation", param="item.call_id"
            )
        new = Item(item_id, "user", [], output, pending=True, type="function_call_output", call=made)
        await self._added(new, position)

    async def add_call(self, item_id: str, call: ToolCall) -> str | None:
        """A response's function call joins the conversation as the newest item; returns its
        ``previous_item_id`` (its ``conversation.item.*`` events are the response's to send)."""
        previous = self.last_item_id
        self._items.append(Item(item_id, "assistant", [], None, type="function_call", call=call))
        self._trim()
        self._changed()
        return previous

    def take_turn(self) -> UserTurn:
        """The input a new response answers, with the history that fits the model's context beside
        the instructions, the turn and the answer (oldest messages left out first). Raises
        ``BadEvent`` when there is no input, ``InvalidParam`` when even no history does not fit;
        either way the pending input stays."""
        turn = self._turn(*(self.pending_audio or (None, b"")))
        self._pending_audio = None
        for item in self._items:
            item.pending = False
        self._changed()
        return turn

    def next_turn(self, audio: bytes) -> UserTurn:
        """The turn ``take_turn`` would give once ``audio`` is committed as a new item (which has no
        id yet); nothing changes."""
        return self._turn(None, audio)

    def _turn(self, audio_item: str | None, audio: bytes) -> UserTurn:
        pending = [i for i in self._items if i.pending and i.text is not None]
        if not audio and not pending:
            raise BadEvent(
                "nothing to respond to: commit audio or create a user message first", code="no_input"
            )
        # With audio, every message goes before it; without, the last message is the turn's text.
        text = transcript = None
        if audio_item is not None or audio:
            reply_to = self.find(audio_item) if audio_item is not None else None
            transcript = reply_to.text if reply_to is not None else None
        elif pending[-1].type == "function_call_output":
            reply_to, text = None, ""  # answered from the history, where the output is the newest
        else:
            reply_to = pending[-1]
            text = reply_to.text
        state = self._state
        history = fit_history(
            self._messages(exclude=reply_to)[-self._max_history :],
            fixed=(state.instructions, text or transcript or ""),
            max_output_tokens=state.max_output_tokens,
            limits=self._limits,
        )
        return UserTurn(
            history=history, audio_item_id=audio_item, audio=audio, text=text, transcript=transcript
        )

    def transcribed(self, item_id: str, transcript: str) -> bool:
        """A region heard the audio of ``item_id``: the item gets its transcript. ``False`` when it
        already had one (its transcription events went out then)."""
        item = self.find(item_id)
        if item is None:
            return True  # deleted meanwhile: the client still learns what it said
        if item.text is not None:
            return False
        item.text = transcript
        self._changed()
        return True

    def open_answer(self, item_id: str, audio: Heard | None) -> None:
        """A response's assistant item joins the conversation after ``last_item_id`` (in progress,
        its ``audio`` being sent; ``None``: a text-only answer); its ``conversation.item.added`` is
        the response's to send."""
        content = [{"type": "output_text", "text": ""}]
        self._items.append(Item(item_id, "assistant", content, None, "in_progress", audio=audio))
        self._trim()

    def answered(self, item_id: str, heard_text: str, *, completed: bool) -> None:
        """What the user heard of a response (all of it, or up to a barge-in)."""
        item = self.find(item_id)
        if item is None:  # deleted while it was playing
            return
        item.text = heard_text or None
        item.status = "completed" if completed else "incomplete"
        if item.audio is None:
            item.content = [{"type": "output_text", "text": heard_text}]
        self._changed()

    def truncatable(self, event: ConversationItemTruncateEvent) -> Item:
        """The assistant audio item ``event`` may truncate, else the OpenAI API's error."""
        item = self._existing(event.item_id, "truncate")
        if item.role != "assistant" or item.audio is None:
            raise InvalidParam("Only assistant messages with audio can be truncated.", param="item_id")
        if event.content_index != 0:
            raise InvalidParam(
                f"Invalid content_index {event.content_index}: the item has one content part (0).",
                param="content_index",
            )
        length = math.ceil(item.audio.sent_ms)
        if event.audio_end_ms < 0 or event.audio_end_ms > length:
            raise InvalidParam(
                f"Audio content of {length}ms is already shorter than {event.audio_end_ms}ms",
                param="audio_end_ms",
            )
        return item

    async def truncate(self, item: Item, audio_end_ms: int) -> None:
        """Keep only the clauses heard by ``audio_end_ms`` (the whole text when all were)."""
        audio = item.audio
        assert audio is not None  # checked by ``truncatable``
        if len(audio.heard_until(audio_end_ms)) < len(audio.ends):
            item.text = audio.text_until(audio_end_ms) or None
        audio.truncate(audio_end_ms)
        self._changed()
        await self._send(
            server_event(
                "conversation.item.truncated", item_id=item.id, content_index=0, audio_end_ms=audio_end_ms
            )
        )

    async def delete(self, item_id: str) -> None:
        """``conversation.item.delete``: out of the history and the chain."""
        item = self._existing(item_id, "delete")
        self._items.remove(item)
        if self._pending_audio is not None and self._pending_audio[0] == item_id:
            self._pending_audio = None
        self._changed()
        await self._send(server_event("conversation.item.deleted", item_id=item_id))

    async def retrieve(self, item_id: str) -> None:
        """``conversation.item.retrieve``: the item as the API shapes it."""
        item = self._existing(item_id, "retrieve")
        await self._send(server_event("conversation.item.retrieved", item=item.body()))

    def _existing(self, item_id: str, action: Literal["truncate", "delete", "retrieve"]) -> Item:
        """The item, else the API's error for ``conversation.item.<action>`` of an unknown id."""
        item = self.find(item_id)
        if item is None:
            doing = {"truncate": "truncating", "delete": "deleting", "retrieve": "retrieving"}[action]
            raise InvalidParam(
                f"Error {doing} item: the item with id '{item_id}' does not exist.",
                param="item_id",
                code=f"item_{action}_invalid_item_id",
            )
        return item

    def _position(self, previous_item_id: str | None) -> int:
        if previous_item_id is None:
            return len(self._items)
        if previous_item_id == "root":
            return 0
        for index, item in enumerate(self._items):
            if item.id == previous_item_id:
                return index + 1
        raise InvalidParam(
            f"Item with item_id not found: {previous_item_id}",
            param="previous_item_id",
            code="item_create_invalid_previous_item_id",
        )

    async def _added(self, item: Item, position: int | None = None) -> None:
        at = len(self._items) if position is None else position
        previous = self._items[at - 1].id if at > 0 else None
        self._items.insert(at, item)
        self._trim()
        self._changed()
        body = item.body()
        await self._send(server_event("conversation.item.added", item=body, previous_item_id=previous))
        await self._send(server_event("conversation.item.done", item=body, previous_item_id=previous))

    def _messages(self, *, exclude: Item | None = None, answered_only: bool = False) -> list[Message]:
        """The items as chat messages: a function call joins the assistant message before it (OpenAI's
        ``tool_calls``), an output is a ``tool`` message; a ``tool`` message left first (its call
        trimmed away) is dropped."""
        out: list[Message] = []
        for item in self._items:
            if item is exclude or (answered_only and item.pending):
                continue
            if item.type == "function_call" and item.call is not None:
                last = out[-1] if out else None
                if last is not None and last.role == "assistant":
                    out[-1] = Message("assistant", last.content, tool_calls=(*last.tool_calls, item.call))
                else:
                    out.append(Message("assistant", "", tool_calls=(item.call,)))
            elif item.type == "function_call_output" and item.call is not None:
                out.append(Message("tool", item.text or "", tool_call_id=item.call.id))
            elif item.text:
                out.append(Message(role=item.role, content=item.text))
        return out

    def _changed(self) -> None:
        """Rewrite the stored history from the items (pending input is not history yet)."""
        history = self._messages(answered_only=True)[-self._max_history :]
        while history and history[0].role == "tool":
            history.pop(0)
        self._state.history = history

    def _trim(self) -> None:
        """Bound the items: twice the history, so items without text (audio awaiting its transcript,
        an answer nobody heard) do not push messages out; pending and in-progress ones stay."""
        excess = len(self._items) - 2 * self._max_history
        for item in list(self._items):
            if excess <= 0:
                break
            if not item.pending and item.status != "in_progress":
                self._items.remove(item)
                excess -= 1
