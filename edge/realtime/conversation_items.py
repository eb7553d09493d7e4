"""A conversation's items as clients see them (``realtime.item``) and as the model sees them (chat
messages, OpenAI's shape: ``wire.turn.Message``), and the turn one response answers.

A function call joins the assistant message before it (``tool_calls``); a call's output is a
``tool`` message. ``edge/realtime/conversation.py`` keeps the items in order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from edge.responses.response_tools import call_item
from edge.turns.heard import Heard
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


def as_messages(
    items: Iterable[Item], *, exclude: Item | None = None, answered_only: bool = False
) -> list[Message]:
    """The items as chat messages: a function call joins the assistant message before it (OpenAI's
    ``tool_calls``), an output is a ``tool`` message; a ``tool`` message left first (its call
    trimmed away) is dropped."""
    out: list[Message] = []
    for item in items:
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


__all__ = ["Item", "ItemStatus", "ItemType", "UserTurn", "as_messages"]
