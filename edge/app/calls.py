"""The calls this edge serves (a WebRTC call, a Twilio stream), by call id, for the application
server's sideband (``GET /v1/realtime?call_id=``, ``edge/app/sideband.py``) and for hang-up.

A ``LiveCall`` is the meeting point of a call's session and its sidebands: the transport hands it
every server event (``publish``: fanned out to the sidebands, the answer's audio deltas excepted, as
OpenAI's sideband gets events and not audio) and merges its ``inbound`` client events into the
session's own frames (``merge``), so the session sees one ordered stream of client events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from litestar.connection import ASGIConnection

from edge.shared.errors import Forbidden, NotFound, TooManyRequests
from wire.tasks import cancel_and_wait

MAX_SIDEBANDS = 4
"""Sidebands on one call at once (an application server needs one; a few allow a monitor too)."""
MAX_QUEUED = 1024
"""Server events queued for a sideband: one that falls this far behind is closed (1008)."""
NOT_FORWARDED = frozenset({"response.output_audio.delta"})
"""The call's own transport carries the audio; a sideband gets events, as OpenAI's does."""

Receive = Callable[[], Awaitable[Any]]
Hangup = Callable[[int, str], Awaitable[None]]


class Sideband:
    """One sideband's queue of server events; ``None`` ends it with ``closing`` as its close."""

    def __init__(self) -> None:
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue(MAX_QUEUED + 1)
        self.closing: tuple[int, str] | None = None

    def deliver(self, text: str) -> None:
        if self.closing is not None:
            return
        if self.outbox.qsize() >= MAX_QUEUED:
            self.stop(1008, "sideband_too_slow")
        else:
            self.outbox.put_nowait(text)

    def stop(self, code: int, reason: str) -> None:
        if self.closing is None:
            self.closing = (code, reason)
            self.outbox.put_nowait(None)  # (room kept for it: maxsize is MAX_QUEUED + 1)


class LiveCall:
    def __init__(self, call_id: str, key_id: str, hangup: Hangup) -> None:
        self.id = call_id
        self.key_id = key_id
        self._hangup = hangup
        self.sidebands: set[Sideband] = set()
        self.inbound: asyncio.Queue[str | bytes] = asyncio.Queue(64)
        """Client events of the sidebands, for the session (bounded: a sideband waits for room)."""
        self.ending = False

    def join(self) -> Sideband:
        if len(self.sidebands) >= MAX_SIDEBANDS:
            raise TooManyRequests(
                f"call {self.id!r} has {MAX_SIDEBANDS} sidebands already: close one first",
                code="too_many_sidebands",
            )
        sideband = Sideband()
        self.sidebands.add(sideband)
        return sideband

    def leave(self, sideband: Sideband) -> None:
        self.sidebands.discard(sideband)

    def publish(self, text: str) -> None:
        """One server event of the call's session, to each sideband."""
        if not self.sidebands:
            return
        with contextlib.suppress(ValueError, AttributeError):
            if json.loads(text).get("type") in NOT_FORWARDED:
                return
        for sideband in list(self.sidebands):
            sideband.deliver(text)

    async def hang_up(self, code: int, reason: str) -> None:
        self.ending = True
        await self._hangup(code, reason)

    def end(self) -> None:
        """The call is over: its sidebands are closed (1000)."""
        self.ending = True
        for sideband in list(self.sidebands):
            sideband.stop(1000, "call_ended")

    def merge(self, receive: Receive) -> MergedReceive:
        return MergedReceive(receive, self.inbound)


class MergedReceive:
    """The transport's frames and the sidebands' events as one ``receive``. The transport's pending
    receive is kept across calls (never cancelled mid-frame), and cancelled by ``aclose``."""

    def __init__(self, receive: Receive, inbound: asyncio.Queue[str | bytes]) -> None:
        self._receive = receive
        self._inbound = inbound
        self._pending: asyncio.Task[Any] | None = None

    async def __call__(self) -> Any:
        if self._pending is None:
            if not self._inbound.empty():
                return _frame(self._inbound.get_nowait())
            self._pending = asyncio.ensure_future(self._receive())
        side = asyncio.ensure_future(self._inbound.get())
        try:
            await asyncio.wait({self._pending, side}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not side.done():
                await cancel_and_wait(side)
        if side.done() and not side.cancelled():
            return _frame(side.result())
        pending, self._pending = self._pending, None
        return pending.result()

    async def aclose(self) -> None:
        await cancel_and_wait(self._pending, ignore=(Exception,))
        self._pending = None


def _frame(raw: str | bytes) -> dict[str, Any]:
    return {"type": "websocket.receive", "text" if isinstance(raw, str) else "bytes": raw}


class Calls:
    """The live calls, by id; and the tasks of the calls the edge runs itself (WebRTC), awaited at
    shutdown."""

    def __init__(self) -> None:
        self.live: dict[str, LiveCall] = {}
        self._tasks: dict[str, tuple[LiveCall, asyncio.Task[None]]] = {}

    def add(self, call: LiveCall) -> None:
        if call.id:  # (a Twilio stream without a CallSid cannot be found: nothing to register)
            self.live[call.id] = call

    def remove(self, call: LiveCall) -> None:
        if self.live.get(call.id) is call:
            del self.live[call.id]
        call.end()

    def find(self, call_id: str, key_id: str) -> LiveCall:
        call = self.live.get(call_id)
        if call is None or call.ending:
            raise NotFound(f"no call {call_id!r} is live on this edge", code="call_not_found")
        if call.key_id != key_id:
            raise Forbidden(f"call {call_id!r} is not this key's: use the key that placed it")
        return call

    def spawn(self, call: LiveCall, run: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(run, name=f"call {call.id}")
        self._tasks[call.id] = (call, task)
        task.add_done_callback(lambda _: self._tasks.pop(call.id, None))

    async def aclose(self) -> None:
        for call, _ in list(self._tasks.values()):
            with contextlib.suppress(Exception):
                await call.hang_up(1001, "edge_shutdown")
        await asyncio.gather(*(task for _, task in list(self._tasks.values())), return_exceptions=True)


def calls_of(conn: ASGIConnection[Any, Any, Any, Any]) -> Calls:
    """The app's registry (``create_app`` puts it in the app's state)."""
    calls = conn.app.state.calls
    assert isinstance(calls, Calls)
    return calls


__all__ = ["MAX_SIDEBANDS", "Calls", "LiveCall", "MergedReceive", "Sideband", "calls_of"]
