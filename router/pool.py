"""Warm connections to regions, so a turn (and above all a failover) pays no handshake.

A connection is handed to one turn at a time. It comes back only clean: after ``turn.done``, or
after a cancelled turn has been drained to its ``turn.done``. Anything else is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

from wire.client import RegionConnection
from wire.errors import RegionUnavailable
from wire.region_auth import ClientAuth

log = logging.getLogger(__name__)


class ConnectionPool:
    """Every connection is opened with a fresh region token from ``auth`` (default: the key file
    named by ``$VOICEMESH_REGION_KEYS``). The region checks it at the handshake only, so a warm
    connection stays usable after its token expires; the token's short life limits what a stolen
    token can open, not how long a legitimately opened connection lives."""

    def __init__(
        self,
        *,
        connect_timeout_s: float,
        url_of: Callable[[str], str | None],
        warm_hold_s: float = 120.0,
        auth: ClientAuth | None = None,
    ) -> None:
        self._auth = auth
        self._timeout = connect_timeout_s
        self._hold_s = warm_hold_s
        self._url_of = url_of
        self._idle: dict[str, deque[RegionConnection]] = {}
        self._opening: dict[str, asyncio.Task[None]] = {}
        self._warm_until: dict[str, float] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.handshakes: dict[str, int] = {}
        """Connections opened per region (a warm pool keeps these off the turn's path)."""

    def idle_count(self, region: str) -> int:
        q = self._idle.get(region)
        return 0 if q is None else sum(1 for c in q if c.is_open)

    async def acquire(self, region: str, *, timeout_s: float | None = None) -> tuple[RegionConnection, bool]:
        """An open connection to ``region`` and whether it was warm (taken from the pool)."""
        q = self._idle.get(region)
        while q:
            conn = q.popleft()
            if conn.is_open:
                return conn, True
            self._spawn(conn.close())
        return await self._open(region, timeout_s), False

    async def _open(self, region: str, timeout_s: float | None = None) -> RegionConnection:
        url = self._url_of(region)
        if url is None:
            raise RegionUnavailable(f"region {region} is no longer in the registry", region=region)
        conn = await RegionConnection.open(
            url, region=region, open_timeout=timeout_s or self._timeout, auth=self._auth
        )
        self.handshakes[region] = self.handshakes.get(region, 0) + 1
        return conn

    def release(self, conn: RegionConnection) -> None:
        """Give back a connection whose last turn ended cleanly."""
        if conn.is_open and self._url_of(conn.region) is not None:
            self._idle.setdefault(conn.region, deque()).append(conn)
        else:
            self.discard(conn)

    def discard(self, conn: RegionConnection) -> None:
        self._spawn(conn.close())

    def keep_warm(self, regions: list[str]) -> None:
        """Make sure each of ``regions`` has an idle connection (opened in the background)."""
        until = time.monotonic() + self._hold_s
        for region in regions:
            self._warm_until[region] = until
            if self.idle_count(region) == 0 and region not in self._opening:
                task = asyncio.create_task(self._warm(region), name=f"warm-{region}")
                self._opening[region] = task
                task.add_done_callback(functools.partial(self._opened, region))

    def rewarm(self, usable: Callable[[str], bool] = lambda _r: True) -> None:
        """Refill the regions asked for recently that are ``usable`` now (a probe tick calls this)."""
        now = time.monotonic()
        self.keep_warm([r for r, until in self._warm_until.items() if until > now and usable(r)])
        for r in [r for r, until in self._warm_until.items() if until <= now]:
            del self._warm_until[r]

    def _opened(self, region: str, _task: asyncio.Task[None]) -> None:
        self._opening.pop(region, None)

    async def _warm(self, region: str) -> None:
        try:
            conn = await self._open(region)
        except RegionUnavailable as exc:
            log.debug("region %s: cannot pre-warm a connection: %s", region, exc)
            return
        self.release(conn)

    def forget(self, region: str) -> None:
        """The region left the registry: close its idle connections."""
        for conn in self._idle.pop(region, deque()):
            self.discard(conn)
        self._warm_until.pop(region, None)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        async def run() -> None:
            with contextlib.suppress(Exception):
                await coro

        task = asyncio.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def track(self, task: asyncio.Task[None]) -> None:
        """Keep a background task (a drain) alive and closed with the pool."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        for task in list(self._opening.values()):
            task.cancel()
        await asyncio.gather(*self._opening.values(), return_exceptions=True)
        conns = [c for q in self._idle.values() for c in q]
        self._idle.clear()
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
        # Drains get a moment to finish their turn.done, then are cut.
        pending = list(self._tasks)
        if pending:
            _done, still = await asyncio.wait(pending, timeout=2.0)
            for t in still:
                t.cancel()
            await asyncio.gather(*still, return_exceptions=True)
