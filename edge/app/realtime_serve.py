"""One accepted Realtime connection: its session's state (new, or resumed from a snapshot) in the
key's residency, and the session served until the client goes, idles out or runs out of time.

``serve_transport`` serves a session over any ``Transport`` that speaks Realtime events: the
WebSocket itself (``serve``), or an adapter that translates another protocol at its boundary
(``edge/app/twilio/``: a phone's media stream).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from litestar.connection import WebSocket
from litestar.exceptions import WebSocketDisconnect

from edge.app.direct_ws import attach_direct
from edge.app.services import EdgeServices
from edge.realtime.client_frames import ClientFrames, Receive
from edge.realtime.key_session import KeySession
from edge.realtime.session import RealtimeSession
from edge.realtime.session_snapshot import SessionSnapshot
from edge.realtime.session_update import initial_state
from edge.shared.errors import SessionExpired, SessionIdle
from edge.shared.events import error_event
from edge.shared.metrics import SESSIONS_OPEN
from edge.shared.state import SessionState
from edge.tenancy.auth import Principal
from edge.tenancy.session_tenancy import SessionTenancy


def session_state(
    socket: WebSocket[Any, Any, Any], services: EdgeServices, principal: Principal,
    resumed: SessionSnapshot | None,
) -> SessionState:  # fmt: skip
    """The new or resumed session's state, in its key's residency narrowed by ``?residency=`` (and
    by the resumed session's own): ``ResidencyNotAllowed`` (403) outside the key's."""
    params = socket.query_params
    return state_for(services, principal, resumed, params.get("residency"), params.get("model", ""))


def state_for(
    services: EdgeServices, principal: Principal, resumed: SessionSnapshot | None,
    requested: str | None, model: str = "",
) -> SessionState:  # fmt: skip
    """``session_state`` of a transport without query parameters: ``requested`` narrows the residency."""
    tenancy = SessionTenancy.of(
        principal.policy,
        requested,
        minted=principal.residency,
        resumed=None if resumed is None else resumed.state,
    )
    if resumed is not None:
        state = resumed.state
    else:
        state = initial_state(
            services.settings, key_id=principal.key_id, model=model, voices=principal.policy.voices
        )
    tenancy.apply(state)
    return state


@dataclass(frozen=True)
class Transport:
    """What a session is served over: Realtime event JSON both ways."""

    send_text: Callable[[str], Awaitable[None]]
    """Raises ``WebSocketDisconnect`` (or ``ConnectionError``) once the peer is gone."""
    receive: Receive
    close: Callable[[int, str], Awaitable[None]]
    scope: Mapping[str, Any]
    """The ASGI scope: its direct-frames extension, if any (``edge/app/direct_ws.py``)."""


async def serve(
    socket: WebSocket[Any, Any, Any], services: EdgeServices, state: SessionState, lease: str,
    resumed: SessionSnapshot | None, principal: Principal,
) -> None:  # fmt: skip
    async def close(code: int, reason: str) -> None:
        await socket.close(code=code, reason=reason)

    transport = Transport(socket.send_text, socket.receive, close, socket.scope)
    await serve_transport(transport, services, state, lease, resumed, principal)


async def serve_transport(
    socket: Transport, services: EdgeServices, state: SessionState, lease: str,
    resumed: SessionSnapshot | None, principal: Principal,
) -> None:  # fmt: skip
    settings = services.settings
    lock = asyncio.Lock()

    async def send(text: str) -> None:
        async with lock:  # the session, its response and its player all write to one socket
            try:
                await socket.send_text(text)
            except WebSocketDisconnect as exc:
                raise ConnectionError("the client went away") from exc

    close = socket.close
    keyed = KeySession(services.limits, principal, send)  # rate_limits.updated; revocation
    session = RealtimeSession(
        services.session_deps(), state, send, close, lease=lease, policy=principal.policy, hooks=keyed
    )

    async def revoked(code: str) -> None:
        session.ended = code
        await close(1008, code)  # policy violation: not to be retried with the same key

    keyed.end_when_revoked(services.auth.keys.watch, revoked)
    frames = ClientFrames(
        socket.receive, idle_s=settings.limits.idle_timeout_s, max_session_s=settings.limits.max_session_s,
        handle_now=session.handle_now,
    )  # fmt: skip
    services.open_sessions += 1
    SESSIONS_OPEN.inc()
    detach = attach_direct(socket.scope, frames.direct)
    try:
        await session.open(resumed)
        async for raw in frames:
            if session.ended is not None:
                break  # taken over or drained: the socket is closed, late frames are not served
            await session.handle(raw)
    except (SessionIdle, SessionExpired) as exc:
        with contextlib.suppress(Exception):
            await send(error_event(exc))
        await session.close()  # before the close frame: the client may reconnect the moment it reads it
        with contextlib.suppress(Exception):
            await close(1000, exc.code)
    except (WebSocketDisconnect, ConnectionError):
        pass
    finally:
        detach()
        services.open_sessions -= 1
        SESSIONS_OPEN.dec()
        await keyed.aclose()
        await session.close()  # the snapshot stays: the client may resume (``docs/resume.md``)


__all__ = ["Transport", "serve", "serve_transport", "session_state", "state_for"]
