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
from typing import Literal

from openai.types.realtime import ConversationItemCreateEvent, ConversationItemTruncateEvent

from edge.audio.turn_audio import TurnAudio
from edge.realtime.conversation_items import Item, UserTurn, as_messages
from edge.realtime.item_create import client_item
from edge.shared.errors import InvalidParam
from edge.shared.events import Send, server_event
from edge.shared.limits import fit_history
from edge.shared.settings import ContentLimits
from edge.shared.state import SessionState
from edge.turns.heard import Heard
from wire.errors import BadEvent
from wire.turn import ToolCall


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
        """``conversation.item.create``: a client's item, checked (``edge/realtime/item_create.py``)
        and put where it asked."""
        item, position = client_item(event, self._items, self._limits)
        await self._added(item, position)

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
            as_messages(self._items, exclude=reply_to)[-self._max_history :],
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

    async def _added(self, item: Item, position: int | None = None) -> None:
        at = len(self._items) if position is None else position
        previous = self._items[at - 1].id if at > 0 else None
        self._items.insert(at, item)
        self._trim()
        self._changed()
        body = item.body()
        await self._send(server_event("conversation.item.added", item=body, previous_item_id=previous))
        await self._send(server_event("conversation.item.done", item=body, previous_item_id=previous))

    def _changed(self) -> None:
        """Rewrite the stored history from the items (pending input is not history yet)."""
        history = as_messages(self._items, answered_only=True)[-self._max_history :]
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
