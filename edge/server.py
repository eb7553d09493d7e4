"""Run an edge in the foreground (``voicemesh edge serve``, ``voicemesh up``) until ``stop`` is set."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

import uvicorn

from edge.app import create_app
from edge.services import EdgeServices
from edge.settings import EdgeSettings
from router.api import TurnRouter

Report = Callable[[str], None]


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # signals belong to the caller, which also owns the router's lifetime


async def serve_edge(
    settings: EdgeSettings, router: TurnRouter, *, stop: asyncio.Event, report: Report = print,
    services: EdgeServices | None = None,
) -> None:  # fmt: skip
    services = services or EdgeServices.build(settings, router)
    config = uvicorn.Config(
        create_app(services), host=settings.host, port=settings.port, log_level="warning", lifespan="on",
        ws_max_size=4 * settings.limits.max_event_bytes, ws_ping_interval=20.0,
        # Base64 PCM barely compresses; deflate cost ~6 % of the edge's CPU at 200 streams.
        ws_per_message_deflate=False,
    )  # fmt: skip
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
    server.should_exit = True
    stopper.cancel()
    await task


class EdgeTask:
    """An edge served by a task of the running event loop (tests and benchmarks look inside it)."""

    def __init__(self, services: EdgeServices, stop: asyncio.Event, task: asyncio.Task[None]) -> None:
        self.services = services
        self._stop = stop
        self._task = task

    @classmethod
    async def start(
        cls, settings: EdgeSettings, router: TurnRouter, *, relay_timing: bool = False
    ) -> EdgeTask:
        services = EdgeServices.build(settings, router)
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
