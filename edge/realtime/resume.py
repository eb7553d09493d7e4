"""Resume: a session's parts to a snapshot and back, and the per-connection keeper that writes the
heard part of an answer as playback advances and notices a takeover (``docs/resume.md``).

A resumed connection gets ``session.created`` (the same id), then every item of its conversation as
``conversation.item.added`` + ``conversation.item.done`` (the events a live session sent when each
item joined; stock clients rebuild their history from them), then ``voicemesh.session.resumed``.
An answer that was being played when its edge went away is finished from what was heard: its item
stays ``incomplete`` with the heard text, and a new response continues after that text (the
router's ``heard_text`` continuation, as after a region failover: one path).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from edge.realtime.conversation import Conversation
from edge.realtime.conversation_items import Item
from edge.realtime.response_lifecycle import ResponseLifecycle
from edge.realtime.session_snapshot import InFlight, SessionSnapshot, SessionSnapshots, key_hash
from edge.shared.events import new_id, server_event
from edge.shared.state import SessionState
from edge.turns.heard import Heard
from router.continuation import join_text
from wire.tasks import cancel_and_wait
from wire.turn import ToolCall

log = logging.getLogger("voicemesh.edge.resume")

VENDOR_RESUMED = "voicemesh.session.resumed"
"""After the replayed items of a resumed session: how many, and whether an answer is continued."""
VENDOR_RESUME_REQUIRED = "voicemesh.session.resume_required"
"""A draining edge closes the session: reconnect with ``session_id`` (to any edge) to carry on."""


def in_flight(responses: ResponseLifecycle) -> InFlight | None:
    """The answer being played, with what the client heard of it (``None``: none, or out of band);
    with its user audio while that is not transcribed yet (a region hears it again on resume)."""
    response, start, turn = responses.response, responses.turn_start, responses.turn
    if response is None or start is None or response.params is None or response.params.out_of_band:
        return None
    transcript = start.transcript or response.relay.transcript
    audio = b"" if transcript or turn is None else turn.audio
    if start.text is None and not transcript and not audio:
        return None
    new = response.heard.heard_text  # every transcript (or text) delta the client got
    start = msgspec.structs.replace(start, transcript=transcript)
    return InFlight(
        item_id=response.frames.item_id, start=start, heard_text=join_text(start.heard_text, new),
        user_item_id=turn.audio_item_id if turn is not None else None, audio=audio,
    )  # fmt: skip


def snapshot_of(
    state: SessionState, conversation: Conversation, responses: ResponseLifecycle, lease: str
) -> SessionSnapshot:
    items = conversation.items
    return SessionSnapshot(
        key_hash=key_hash(state.key_id),
        lease=lease,
        state=state,
        items=[item.body() for item in items],
        pending=[item.id for item in items if item.pending],
        in_flight=in_flight(responses),
    )


def _text_of(content: list[dict[str, Any]]) -> str | None:
    texts = [c.get("text") or c.get("transcript") for c in content]
    return " ".join(t for t in texts if t) or None


def item_of(body: dict[str, Any], earlier: list[Item], *, pending: bool) -> Item | None:
    """An item back from its API form; ``None`` for a form this edge does not know (skipped)."""
    item_id, status = str(body.get("id", "")), body.get("status", "completed")
    if status not in ("completed", "incomplete", "in_progress"):
        status = "completed"
    kind = body.get("type")
    if kind == "function_call":
        call = ToolCall(id=body["call_id"], name=body["name"], arguments=body.get("arguments", ""))
        return Item(item_id, "assistant", [], None, status, type="function_call", call=call)
    if kind == "function_call_output":
        made = next((i.call for i in earlier if i.call is not None and i.call.id == body["call_id"]), None)
        if made is None:
            return None
        output = str(body.get("output", ""))
        return Item(
            item_id, "user", [], output, status, pending=pending, type="function_call_output", call=made
        )
    if kind != "message" or body.get("role") not in ("user", "assistant"):
        return None
    content: list[dict[str, Any]] = list(body.get("content") or [])
    audio = None
    if body["role"] == "assistant" and content and content[0].get("type") == "output_audio":
        # Its audio is gone with the old edge: a truncation can keep all of it or nothing now.
        text = _text_of(content)
        audio = Heard.restored(text)
    return Item(item_id, body["role"], content, _text_of(content), status, pending=pending, audio=audio)


def restore(snapshot: SessionSnapshot, conversation: Conversation) -> list[Item]:
    """The snapshot's items into ``conversation``; the answer in flight is left ``incomplete``
    with what was heard of it."""
    pending = set(snapshot.pending)
    items: list[Item] = []
    for body in snapshot.items:
        item = item_of(body, items, pending=body.get("id") in pending)
        if item is not None:
            items.append(item)
    flight = snapshot.in_flight
    for item in items:
        if item.status == "in_progress":
            item.status = "incomplete"
            if flight is not None and item.id == flight.item_id:
                item.text = flight.heard_text or None
                kind = "output_audio" if item.audio is not None else "output_text"
                field = "transcript" if kind == "output_audio" else "text"
                item.content = [{"type": kind, field: flight.heard_text}]
                if item.audio is not None:
                    item.audio.ends = [(flight.heard_text, 0.0)] if flight.heard_text else []
    conversation.restore(items)
    return items


def replay(items: list[Item]) -> list[str]:
    """The events that tell a resumed client its conversation, in order."""
    events: list[str] = []
    previous: str | None = None
    for item in items:
        body = item.body()
        events.append(server_event("conversation.item.added", item=body, previous_item_id=previous))
        events.append(server_event("conversation.item.done", item=body, previous_item_id=previous))
        previous = item.id
    return events


def continue_answer(snapshot: SessionSnapshot, responses: ResponseLifecycle) -> bool:
    """Start the rest of the answer that was in flight, after what was heard; ``False`` if none."""
    flight = snapshot.in_flight
    if flight is None:
        return False
    start = msgspec.structs.replace(flight.start, turn_id=new_id("turn"), heard_text=flight.heard_text)
    responses.continue_turn(start, item_id=flight.user_item_id, audio=flight.audio)
    return True


class SessionKeeper:
    """One connection's background snapshot writer: the heard part of an answer in flight, at most
    every ``interval_s`` and only when it grew; and, as often, whether another connection took
    the session over (``on_taken_over``) or the store lost the snapshot (then it is written again)."""

    def __init__(
        self,
        snapshots: SessionSnapshots,
        state: SessionState,
        responses: ResponseLifecycle,
        lease: str,
        on_taken_over: Callable[[], Awaitable[None]],
        *,
        interval_s: float,
    ) -> None:
        self._snapshots = snapshots
        self._state = state
        self._responses = responses
        self._lease = lease
        self._on_taken_over = on_taken_over
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self._written: tuple[str, str] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"{self._state.id}-keeper")

    async def aclose(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task, ignore=(Exception,))

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                flight = in_flight(self._responses)
                heard = None if flight is None else (flight.item_id, flight.heard_text)
                if heard is not None and heard != self._written:
                    await self._snapshots.save(self._state)  # checks the lease too
                    self._written = heard
                    continue
                stored = await self._snapshots.stored(self._state.id)
                if not stored.found:
                    # The store lost it (a Redis restarted empty, or its TTL ran out while the
                    # session waited): written again, or a resume after this edge dies would find
                    # no session. (Unreadable is another edge version's: left alone.)
                    await self._snapshots.save(self._state)
                elif stored.taken_from(self._lease):
                    await self._on_taken_over()
                    return
            except Exception:  # a snapshot is best effort: the live session goes on regardless
                log.exception("session %s: snapshot failed", self._state.id)


__all__ = [
    "VENDOR_RESUMED",
    "VENDOR_RESUME_REQUIRED",
    "SessionKeeper",
    "continue_answer",
    "in_flight",
    "replay",
    "restore",
    "snapshot_of",
]
