"""One accepted Realtime connection: its session's state (new, or resumed from a snapshot) in the
key's residency, and the session served until the client goes, idles out or runs out of time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from litestar.connection import ASGIConnection, WebSocket
from litestar.exceptions import WebSocketDisconnect

from edge.app.calls import LiveCall, MergedReceive
from edge.app.direct_ws import attach_direct
from edge.app.services import EdgeServices
from edge.realtime.client_frames import ClientFrames
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
    socket: ASGIConnection[Any, Any, Any, Any], services: EdgeServices, principal: Principal,
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
    """``session_state`` of a transport without query parameters (a phone's media stream):
    ``requested`` narrows the residency."""
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


class Transport(Protocol):
    """What a session is served over: the WebSocket (``serve``), a WebRTC call (``edge/app/webrtc/``)."""

    async def receive(self) -> Any:
        """The client's next frame as an ASGI message (``websocket.receive`` / ``.disconnect``)."""

    async def send(self, text: str) -> None:
        """One server event; ``ConnectionError`` when the client is gone."""

    async def close(self, code: int, reason: str) -> None: ...

    def attach(self, direct: Callable[[bytes], bool]) -> Callable[[], None]:
        """Offer frames to ``direct`` from the transport's own callback (the fast append path); the
        detach."""


def new_session(
    services: EdgeServices, state: SessionState, lease: str, principal: Principal, transport: Transport
) -> tuple[RealtimeSession, KeySession]:
    """The session on ``transport``, with its key's hooks (``rate_limits.updated``, revocation)."""
    keyed = KeySession(services.limits, principal, transport.send)
    session = RealtimeSession(
        services.session_deps(), state, transport.send, transport.close, lease=lease,
        policy=principal.policy, hooks=keyed,
    )  # fmt: skip

    async def revoked(code: str) -> None:
        session.ended = code
        await transport.close(1008, code)  # policy violation: not to be retried with the same key

    keyed.end_when_revoked(services.auth.keys.watch, revoked)
    return session, keyed


async def serve(
    socket: WebSocket[Any, Any, Any], services: EdgeServices, state: SessionState, lease: str,
    resumed: SessionSnapshot | None, principal: Principal,
) -> None:  # fmt: skip
    transport = SocketTransport(socket)
    session, keyed = new_session(services, state, lease, principal, transport)
    await run_session(services, session, keyed, transport, opening=lambda: session.open(resumed))


async def run_session(
    services: EdgeServices, session: RealtimeSession, keyed: KeySession, transport: Transport,
    opening: Callable[[], Awaitable[None]] | None = None, call: LiveCall | None = None,
) -> None:  # fmt: skip
    """Serve ``session`` (opened by ``opening``, or already) until the client goes, idles out or runs
    out of time; then close it (its snapshot stays: the client may resume, ``docs/resume.md``).
    A ``call``'s sidebands' client events are served with the transport's, in one order."""
    settings = services.settings
    receive = transport.receive if call is None else call.merge(transport.receive)
    frames = ClientFrames(
        receive, idle_s=settings.limits.idle_timeout_s, max_session_s=settings.limits.max_session_s,
        handle_now=session.handle_now,
    )  # fmt: skip
    services.open_sessions += 1
    SESSIONS_OPEN.inc()
    detach = transport.attach(frames.direct)
    try:
        if opening is not None:
            await opening()
        async for raw in frames:
            if session.ended is not None:
                break  # taken over or drained: the socket is closed, late frames are not served
            await session.handle(raw)
    except (SessionIdle, SessionExpired) as exc:
        with contextlib.suppress(Exception):
            await transport.send(error_event(exc))
        await session.close()  # before the close frame: the client may reconnect the moment it reads it
        with contextlib.suppress(Exception):
            await transport.close(1000, exc.code)
    except (WebSocketDisconnect, ConnectionError):
        pass
    finally:
        detach()
        if isinstance(receive, MergedReceive):
            await receive.aclose()  # (the transport's receive it still awaits)
        services.open_sessions -= 1
        SESSIONS_OPEN.dec()
        await keyed.aclose()
        await session.close()


class SocketTransport:
    """A session over a WebSocket: the Realtime client's (``serve``), or another protocol's whose
    adapter overrides ``receive`` and ``write`` (``edge/app/twilio/``)."""

    gone = "the client went away"

    def __init__(self, socket: WebSocket[Any, Any, Any]) -> None:
        self._socket = socket
        self._lock = asyncio.Lock()

    async def receive(self) -> Any:
        return await self._socket.receive()

    async def write(self, text: str) -> None:
        await self._socket.send_text(text)

    async def send(self, text: str) -> None:
        async with self._lock:  # the session, its response and its player all write to one socket
            try:
                await self.write(text)
            except WebSocketDisconnect as exc:
                raise ConnectionError(self.gone) from exc

    async def close(self, code: int, reason: str) -> None:
        await self._socket.close(code=code, reason=reason)

    def attach(self, direct: Callable[[bytes], bool]) -> Callable[[], None]:
        return attach_direct(self._socket.scope, direct)


__all__ = [
    "SocketTransport",
    "Transport",
    "new_session",
    "run_session",
    "serve",
    "session_state",
    "state_for",
]
