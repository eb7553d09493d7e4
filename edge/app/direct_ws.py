"""The edge's WebSocket protocol: uvicorn's websockets-sansio one, with a way around the ASGI queue
for the frame a streaming client sends 25 times a second.

Through ASGI each client frame is parsed by websockets, put on the connection's queue as a dict,
wakes the session's task, goes through Litestar's receive, and pauses and resumes the socket's
reading (uvicorn pauses after every message). Here the protocol cuts the byte stream into frames
itself, and offers each final text frame to the session's reader (``ClientFrames.direct``, attached
through the scope extension ``DIRECT``) in the transport's callback, when nothing is queued before
it: the session takes a plain append there and then, and refuses anything else. Every frame not
taken goes to websockets whole and in order, so the WebSocket protocol (handshake, control frames,
fragments, the size limit, close) stays uvicorn's and websockets'. Under another server the
extension is absent and every frame goes through ASGI. Side by side: 2.62 -> 1.72 ms of edge CPU
per stream-second at 600 streams with the VAD changes (docs/benchmarks.md "Append hot path").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.http11 import Request
from websockets.protocol import State

try:
    from websockets.speedups import apply_mask
except ImportError:  # (websockets built without its C extension)
    from websockets.utils import apply_mask

DIRECT = "voicemesh.direct_frames"
"""The scope extension: ``{"attach": attach}``, ``attach(sink)`` with ``sink(frame) -> taken``."""

Sink = Callable[[bytes], bool]

log = logging.getLogger("voicemesh.edge")


class DirectWebSocket(WebSocketsSansIOProtocol):
    _sink: Sink | None = None
    _split = False
    """Incoming bytes are cut into frames here, websockets is fed whole frames only, and a plain
    text frame can be offered to the sink without websockets parsing it (``data_received``)."""
    _partial: bytearray | None = None
    """The start of a frame not received whole yet."""
    _closed_on_client_error = False
    """uvicorn closed the connection on a protocol error of the client's (``handle_parser_exception``)."""

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        scope: Any = getattr(self, "scope", None)  # (none when the handshake was refused)
        if scope is not None:
            scope["extensions"][DIRECT] = {"attach": self._attach}
            # A client sends no frame before the server's 101 (RFC 6455 4.1): websockets' reader is
            # empty here, its parser at a frame boundary, where the cutting may start.
            self._split = not self.conn.reader.buffer

    def data_received(self, data: bytes) -> None:
        """Frames cut here, each whole: a final, masked, unextended text frame within the size limit
        is offered to the sink, unmasked here (websockets' own C unmasking); every other frame, and
        one the sink does not take, goes to websockets as received, in order (``_parse``)."""
        if not self._split:
            super().data_received(data)
            return
        buf: bytes | bytearray = data
        if self._partial is not None:
            self._partial += data
            buf = self._partial
        at, fed, n = 0, 0, len(buf)
        while n - at >= 2:
            b0, b1 = buf[at], buf[at + 1]
            length, head = b1 & 0x7F, at + 2
            if length >= 126:
                size = 2 if length == 126 else 8
                if n < head + size:
                    break
                length, head = int.from_bytes(buf[head : head + size], "big"), head + size
            if length > self.config.ws_max_size:  # (websockets refuses it: it is not kept whole here)
                self._split = False
                break
            if b1 & 0x80:
                head += 4
            end = head + length
            if end > n:
                break
            if b0 == 0x81 and b1 & 0x80:  # FIN + text, masked: the sink may take it
                if fed < at:  # (what came before it first: a frame queued for the app keeps it there)
                    self._parse(buf[fed:at])
                    fed = at
                if self._open() and self._offer(apply_mask(buf[head:end], buf[head - 4 : head])):
                    fed = end
            at = end
        if not self._split:  # from here on websockets reads everything, as received
            self._partial = None
            self._parse(buf[fed:])
            return
        if fed < at:
            self._parse(buf[fed:at])
        if at == n:
            self._partial = None
        elif buf is not self._partial:  # (a frame still coming: kept, grown in place as the rest arrives)
            self._partial = bytearray(buf[at:])
        elif at:
            del self._partial[:at]

    def _parse(self, frames: bytes | bytearray) -> None:
        super().data_received(cast(bytes, frames))  # (websockets reads either)

    def _open(self) -> bool:
        return (
            self._sink is not None
            and self.conn.state is State.OPEN
            and self.conn.current_size is None  # (no fragmented message under way)
            and not self.close_sent
            and self.queue.empty()  # (nothing before it waits: taking it now keeps the order)
        )

    def handle_parser_exception(self) -> None:
        self._closed_on_client_error = True
        super().handle_parser_exception()

    async def send(self, message: ASGISendEvent) -> None:
        # uvicorn closes the connection itself when the client breaks the protocol (a text frame
        # that is not UTF-8: 1007) and queues the disconnect, but answers the app's sends after that
        # with a RuntimeError, as if the app had closed first: a session writing an answer just then
        # counted a server_error. To the app, such a client has gone like any other.
        if self._closed_on_client_error:
            raise ClientDisconnected
        await super().send(message)

    def _attach(self, sink: Sink | None) -> None:
        self._sink = sink

    def connection_lost(self, exc: Exception | None) -> None:
        self._sink = None
        super().connection_lost(exc)

    def _offer(self, payload: bytes) -> bool:
        sink = self._sink
        if sink is None:
            return False
        try:
            return sink(payload)
        except Exception:  # a bug in the session must not break the connection's protocol
            log.exception("direct frame handling failed: the frame goes through ASGI")
            return False


def attach_direct(scope: Mapping[str, Any], sink: Sink) -> Callable[[], None]:
    """Have the connection offer its frames to ``sink``; returns the detach. Without the extension
    (another server, the test client) nothing changes: every frame comes through ASGI."""
    extension = (scope.get("extensions") or {}).get(DIRECT)
    if extension is None:
        return lambda: None
    attach: Callable[[Sink | None], None] = extension["attach"]
    attach(sink)
    return lambda: attach(None)
