"""Run an edge in the foreground (``voicemesh edge serve``, ``voicemesh up``) until ``stop`` is set.

The HTTP server is uvicorn with its request head bounded in size and in time (``BoundedHttp``), at
most ``max_sessions`` plus some headroom connections at once, and WebSocket messages bounded by the
event size limit; audio appends skip the ASGI queue (``edge.app.direct_ws``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from edge.app.asgi import create_app
from edge.app.direct_ws import DirectWebSocket
from edge.app.services import EdgeServices
from edge.shared.settings import EdgeSettings
from router.api import TurnRouter
from wire.access_log import access_log_on, uvicorn_log_options

Report = Callable[[str], None]


_HEAD_TOO_LARGE = b"request head too large"


class BoundedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bounded request head, in size and in time.

    uvicorn bounds neither. A client may send its head as slowly as it likes (slow-loris: each such
    connection is held forever). And a WebSocket upgrade hands the head to the websockets-sansio
    parser, which refuses a header line over 8 KiB (an 8 KB bearer token) but never sends its 400
    (uvicorn 0.54 flushes nothing when the handshake request fails to parse): the client hangs.
    Here a head over ``max_head_bytes`` is answered 431 and one not complete within
    ``head_timeout_s`` 408, both closing the connection, before the app or the WebSocket parser.
    """

    max_head_bytes = 8192
    head_timeout_s = 10.0

    @classmethod
    def bounded(cls, *, max_head_bytes: int, head_timeout_s: float) -> type[BoundedHttp]:
        """This protocol with other bounds (uvicorn builds protocols from a class)."""
        bounds = {"max_head_bytes": max_head_bytes, "head_timeout_s": head_timeout_s}
        return type("BoundedHttp", (cls,), bounds)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        if self._head_timer is None:  # the next request on a kept-alive connection
            self._start_head_timer()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._stop_head_timer()
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if self._head_bytes > self.max_head_bytes:
            self._refuse(
                431, "Request Header Fields Too Large", f"request head over {self.max_head_bytes} bytes"
            )
        else:
            super().send_400_response(msg)

    def _count(self, n: int) -> None:
        self._head_bytes += n
        if self._head_bytes > self.max_head_bytes:
            raise ValueError(_HEAD_TOO_LARGE)  # httptools stops parsing; data_received answers 400

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self._refuse(408, "Request Timeout", f"request head not received within {self.head_timeout_s} s")

    def _refuse(self, status: int, reason: str, message: str) -> None:
        body = message.encode()
        head = (
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.transport.close()


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # signals belong to the caller, which also owns the router's lifetime


async def serve_edge(
    settings: EdgeSettings, router: TurnRouter, *, stop: asyncio.Event, report: Report = print,
    services: EdgeServices | None = None,
) -> None:  # fmt: skip
    services = services or EdgeServices.build(settings, router)
    limits = settings.limits
    config = uvicorn.Config(
        create_app(services), host=settings.host, port=settings.port, lifespan="on", **uvicorn_log_options(),
        http=BoundedHttp.bounded(max_head_bytes=limits.max_head_bytes, head_timeout_s=limits.head_timeout_s),
        ws=DirectWebSocket,  # appends past the ASGI queue (edge/app/direct_ws.py)
        ws_max_size=4 * limits.max_event_bytes, ws_ping_interval=20.0, ws_ping_timeout=20.0,
        # Base64 PCM barely compresses; deflate cost ~6 % of the edge's CPU at 200 streams.
        ws_per_message_deflate=False,
        # Past this many connections plain HTTP requests get 503: sessions are capped (429) below it,
        # and the headroom keeps /health and /metrics answering on a full edge.
        limit_concurrency=limits.max_sessions + 256,
        timeout_keep_alive=5,  # an idle kept-alive HTTP connection
    )  # fmt: skip
    access_log_on()
    server = _Uvicorn(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            await task
            raise OSError(f"edge could not listen on {settings.host}:{settings.port}")
        await asyncio.sleep(0.02)
    report(f"edge listening on ws://{settings.host}:{settings.port}/v1/realtime")
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if not task.done():
        await drain(services, report)
    server.should_exit = True
    stopper.cancel()
    await task


async def drain(services: EdgeServices, report: Report) -> None:
    """Graceful stop (SIGTERM): refuse new sessions (503 + ``Retry-After``, ``/health`` too), let
    the running responses finish within ``drain_s``, then snapshot every session and tell each
    client to resume elsewhere (``docs/resume.md``). Bounded: ``drain_s`` plus a few seconds."""
    services.draining = True
    live = list(services.sessions.live.values())
    if not live:
        return
    wait_s = services.settings.resume.drain_s
    report(f"edge draining: {len(live)} session(s), answers given up to {wait_s:g} s to finish")
    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(session.drain(wait_s) for session in live), return_exceptions=True),
            wait_s + 5.0,  # the snapshot writes and closes are bounded too (store timeouts)
        )
    except TimeoutError:
        report("edge drain timed out: the remaining sessions are closed as the server stops")
        return
    failed = [r for r in results if isinstance(r, BaseException)]
    report(f"edge drained: {len(live) - len(failed)} session(s) told to resume, {len(failed)} failed")


class EdgeTask:
    """An edge served by a task of the running event loop (tests and benchmarks look inside it)."""

    def __init__(self, services: EdgeServices, stop: asyncio.Event, task: asyncio.Task[None]) -> None:
        self.services = services
        self._stop = stop
        self._task = task

    @classmethod
    async def start(
        cls, settings: EdgeSettings, router: TurnRouter, *, relay_timing: bool = False,
        services: EdgeServices | None = None,
    ) -> EdgeTask:  # fmt: skip
        services = services or EdgeServices.build(settings, router)
        if relay_timing:
            services.relay_times = []
        stop, listening = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(
            serve_edge(settings, router, stop=stop, report=lambda _: listening.set(), services=services)
        )
        waiter = asyncio.create_task(listening.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            waiter.cancel()
            await task  # raises why it could not listen
        return cls(services, stop, task)

    async def aclose(self) -> None:
        self._stop.set()
        await self._task
