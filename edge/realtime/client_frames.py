"""A session's client frames, read from its socket within the session's time limits.

Frames come two ways. Through the ASGI receive (``ClientFrames`` iterated), one at a time, each
handled whole before the next is read. And, where the server runs ``DirectWebSocket`` (the app
package's ``direct_ws.py``), straight from the transport's callback (``direct``): a frame that
arrives while the session waits for one, with nothing queued before it, is offered to the session's
``handle_now``, which buffers a plain append on the spot (25 frames a second per stream: the edge's
hot path) and refuses anything else, which then goes the first way. Either way frames are handled in
the order the client sent them.

No timeout per receive (that cost ~3.5 % of the edge's CPU at 25 appends a second per stream,
docs/benchmarks.md "Append hot path"): one timer per session wakes once per idle period, looks at
when the last frame came, and cancels the receive only if the client is past its time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from edge.shared.errors import SessionExpired, SessionIdle

Receive = Callable[[], Awaitable[Any]]
"""The socket's ASGI-style receive: a message dict (``websocket.receive`` / ``.disconnect``)."""


class ClientFrames:
    """Iterate for the client's frames (text or bytes); raises ``SessionIdle`` or ``SessionExpired``
    when its time is up, and ends when the client disconnects."""

    def __init__(
        self, receive: Receive, *, idle_s: float, max_session_s: float,
        handle_now: Callable[[bytes], bool] = lambda _raw: False,
    ) -> None:  # fmt: skip
        self._receive = receive
        self._idle_s = idle_s
        self._handle_now = handle_now
        self._loop = asyncio.get_running_loop()
        self._ends_at = self._loop.time() + max_session_s
        self._last = self._loop.time()
        self._receiving = False
        """The reader waits in ``receive``: nothing of this client's is being handled."""
        self._ended: SessionIdle | SessionExpired | None = None
        self._task: asyncio.Task[Any] | None = None

    def direct(self, raw: bytes) -> bool:
        """A frame from the transport, nothing queued before it: handled now (``True``) if the
        reader waits and the session takes it, else the transport queues it for the reader."""
        if not self._receiving or self._ended is not None or not self._handle_now(raw):
            return False
        self._last = self._loop.time()
        return True

    def _check(self) -> None:
        now = self._loop.time()
        if now >= self._ends_at:
            self._ended = SessionExpired("maximum session duration reached")
        elif self._receiving and now >= self._last + self._idle_s:
            self._ended = SessionIdle(
                f"no client event for {self._idle_s:g} s: session closed (send events, or reconnect)"
            )
        if self._ended is None:  # (a frame still being handled counts as activity)
            since = self._last if self._receiving else now
            self._watch = self._loop.call_at(min(self._ends_at, since + self._idle_s), self._check)
        elif self._receiving and self._task is not None:
            self._task.cancel()  # (else the loop raises it before its next receive)

    async def __aiter__(self) -> AsyncIterator[str | bytes]:
        self._task = asyncio.current_task()
        assert self._task is not None
        self._watch = self._loop.call_at(min(self._ends_at, self._last + self._idle_s), self._check)
        try:
            while True:
                if self._ended is not None:
                    raise self._ended
                self._receiving = True
                try:
                    message = await self._receive()
                except asyncio.CancelledError:
                    if self._ended is None or self._task.uncancel() > 0:
                        raise  # not (only) ours
                    raise self._ended from None
                finally:
                    self._receiving = False
                self._last = self._loop.time()
                if message["type"] == "websocket.disconnect":
                    return
                text = message.get("text")
                data = message.get("bytes")
                yield text if isinstance(text, str) else data if isinstance(data, bytes) else b""
        finally:
            self._watch.cancel()
