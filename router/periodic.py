"""A background task that runs a callback every few seconds until closed (probes, registry polls)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from wire.tasks import cancel_and_wait


class Periodic:
    """Runs ``tick`` every ``interval_s`` (the first time one interval after ``start()``)."""

    def __init__(self, interval_s: float, tick: Callable[[], Awaitable[None]], *, name: str) -> None:
        self.interval_s = interval_s
        self._tick = tick
        self._name = name
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=self._name)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self._tick()

    async def aclose(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
