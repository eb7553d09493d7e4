"""A client's ``conversation.item.create``, checked into the item it adds and where it goes:
user and assistant text messages, a ``function_call`` (a call the client adds to the history) or a
``function_call_output`` (the result of a call it was given: input the next response answers).

``system`` items are refused: the system prompt is the region's and the session's
``instructions``, which are bounded; a client-written one would override both.
"""

from __future__ import annotations

from collections.abc import Sequence

from openai.types.realtime import ConversationItemCreateEvent

from edge.realtime.conversation_items import Item
from edge.responses.response_tools import MAX_TOOL_NAME_CHARS
from edge.shared.errors import InvalidParam
from edge.shared.events import new_id
from edge.shared.limits import check_text
from edge.shared.settings import ContentLimits
from wire.errors import BadEvent
from wire.turn import ToolCall


def client_item(
    event: ConversationItemCreateEvent, items: Sequence[Item], limits: ContentLimits
) -> tuple[Item, int]:
    """The new item and its index in ``items``: appended, or after ``previous_item_id``
    (``"root"``: first). Raises the OpenAI API's error for a bad one; ``items`` is not changed."""
    item = event.item
    if item.type in ("function_call", "function_call_output"):
        return _function_item(event, items, limits)
    if item.type != "message":
        raise BadEvent(f"conversation items of type {item.type!r} are not supported", code="unsupported_item")
    if item.role == "system":
        raise InvalidParam(
            "system messages cannot be added by a client: set the session's `instructions`",
            param="item.role",
        )
    texts = [getattr(c, "text", None) or getattr(c, "transcript", None) for c in item.content]
    text = " ".join(t for t in texts if t)
    if not text:
        raise BadEvent("a message item needs text content (input_text / text)", code="invalid_value")
    check_text(text, "item.content", limits.max_text_chars)
    item_id = _new_id(item.id, items)
    position = position_after(items, event.previous_item_id)
    content = item.model_dump(exclude_none=True)["content"]
    return Item(item_id, item.role, content, text, pending=item.role == "user"), position


def _function_item(
    event: ConversationItemCreateEvent, items: Sequence[Item], limits: ContentLimits
) -> tuple[Item, int]:
    item = event.item
    item_id = _new_id(item.id, items)
    call_id = getattr(item, "call_id", None)
    if not call_id:
        raise InvalidParam("a function item needs a call_id", param="item.call_id")
    check_text(call_id, "item.call_id", MAX_TOOL_NAME_CHARS)
    position = position_after(items, event.previous_item_id)
    if item.type == "function_call":
        check_text(item.name, "item.name", MAX_TOOL_NAME_CHARS)
        check_text(item.arguments, "item.arguments", limits.max_text_chars)
        call = ToolCall(id=call_id, name=item.name, arguments=item.arguments)
        return Item(item_id, "assistant", [], None, type="function_call", call=call), position
    output = getattr(item, "output", "")
    check_text(output, "item.output", limits.max_text_chars)
    made = next(
        (i.call for i in items if i.type == "function_call" and i.call and i.call.id == call_id), None
    )
    if made is None:
        raise InvalidParam(
            f"no function_call with call_id '{call_id}' in this conversation", param="item.call_id"
        )
    return Item(item_id, "user", [], output, pending=True, type="function_call_output", call=made), position


def _new_id(asked: str | None, items: Sequence[Item]) -> str:
    item_id = asked or new_id("item")
    if any(i.id == item_id for i in items):
        raise InvalidParam(f"Item with id '{item_id}' already exists.", param="item.id")
    return item_id


def position_after(items: Sequence[Item], previous_item_id: str | None) -> int:
    """Where an item after ``previous_item_id`` goes (``None``: last; ``"root"``: first)."""
    if previous_item_id is None:
        return len(items)
    if previous_item_id == "root":
        return 0
    for index, item in enumerate(items):
        if item.id == previous_item_id:
            return index + 1
    raise InvalidParam(
        f"Item with item_id not found: {previous_item_id}",
        param="previous_item_id",
        code="item_create_invalid_previous_item_id",
    )


__all__ = ["client_item", "position_after"]
