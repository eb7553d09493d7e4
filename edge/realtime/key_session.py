"""A key's part in one open Realtime session: ``rate_limits.updated`` events, and the end of the
session when its stored key is revoked (``docs/keys.md``).

``rate_limits.updated`` follows ``session.created`` and every ``response.done`` for a stored key's
sessions (and a JWT's that carries a rate or burst), with the key's connect bucket (``requests``:
its burst, what is left of it, and when it is full again), shared by every edge. The installed
SDK's ``RateLimit.name`` is ``requests`` or ``tokens`` only, so the key's session slots cannot be
named there and are not reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from edge.shared.errors import KeyRevoked
from edge.shared.events import Send, error_event, server_event
from edge.tenancy.auth import Principal
from edge.tenancy.keys import RevocationWatch
from edge.tenancy.shared_limits import SharedKeyLimits

log = logging.getLogger("voicemesh.edge.keys")


class KeySession:
    """The session's ``SessionHooks`` (``edge/realtime/session.py``): ``rate_limits.updated`` after
    ``session.created`` and after each ``response.done``; the end of the session on revocation."""

    def __init__(self, limits: SharedKeyLimits, principal: Principal, send: Send) -> None:
        self._limits = limits
        self._principal = principal
        self._send = send
        self._tasks: set[asyncio.Task[None]] = set()
        self._unwatch: Callable[[], None] | None = None
        policy = principal.policy
        self._reports = principal.stored_key or policy.rate_per_s is not None or policy.burst is not None
        """Only keys with limits of their own are told about them: an env key's are the edge's
        configuration, and its clients' event sequences stay as they were before keys had limits."""

    async def session_created(self) -> None:
        if self._reports:
            await self._rate_limits()  # at once: the client's first event after ``session.created``

    def response_done(self) -> None:
        if not self._reports:
            return
        # Its own task: the response's slot is freed as ``response.done`` goes out, with no await
        # between (a client may send ``response.create`` the moment it reads it).
        task = asyncio.create_task(self._rate_limits(), name="rate-limits-updated")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _rate_limits(self) -> None:
        principal = self._principal
        state = await self._limits.peek_rate(principal.key_id, principal.policy)
        with contextlib.suppress(Exception):  # the client went away meanwhile
            await self._send(server_event("rate_limits.updated", rate_limits=[state.as_event_item()]))

    def end_when_revoked(self, watch: RevocationWatch, end: Callable[[str], Awaitable[None]]) -> None:
        """For a stored key's session: when the key is revoked, an ``error`` event
        (``api_key_revoked``), then ``end(code)`` closes the connection."""
        if not self._principal.stored_key:
            return
        key_id = self._principal.key_id

        async def revoked() -> None:
            log.info("key %s revoked: ending one of its sessions", key_id)
            error = KeyRevoked("this session's API key was revoked: the session is closed")
            with contextlib.suppress(Exception):
                await self._send(error_event(error))
            await end(error.code)

        self._unwatch = watch.add(key_id, revoked)

    async def aclose(self) -> None:
        if self._unwatch is not None:
            self._unwatch()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


__all__ = ["KeySession"]
