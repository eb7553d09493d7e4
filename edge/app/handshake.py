"""What every WebSocket transport does before it accepts a connection: the credential checked,
the key's connect rate and session cap (a slot taken), and a refusal answered as a real HTTP
response saying why (``/v1/realtime``, ``/v1/twilio/media-stream``)."""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

from litestar.connection import ASGIConnection, WebSocket
from litestar.types.asgi_types import WebSocketResponseStartEvent

from edge.app.services import EdgeServices
from edge.realtime.session_snapshot import SessionSnapshot
from edge.shared.errors import Draining, EdgeError, HandshakeTimeout, edge_error
from edge.shared.metrics import SESSIONS_REFUSED
from edge.tenancy.auth import Principal, bearer_token
from edge.tenancy.shared_limits import Slot
from wire.errors import VoicemeshError


async def authenticate(
    services: EdgeServices, conn: ASGIConnection[Any, Any, Any, Any], subprotocols: list[str]
) -> Principal:
    return await authenticate_token(services, bearer_token(conn.headers, subprotocols))


async def authenticate_token(services: EdgeServices, token: str | None) -> Principal:
    try:
        # Credentials may be looked up in Redis: bounded there too, this bounds the whole check.
        async with asyncio.timeout(services.settings.limits.handshake_timeout_s):
            return await services.auth.authenticate(token)
    except TimeoutError as exc:
        raise HandshakeTimeout("checking the credentials took too long: try again") from exc


async def admit(services: EdgeServices, principal: Principal) -> Slot:
    """``principal`` within their key's connect rate and session cap (a slot is taken; both counted
    across edges, ``edge/tenancy/shared_limits.py``)."""
    await services.limits.check_rate(principal.key_id, principal.policy)
    return await services.limits.acquire(principal.key_id, principal.policy)


async def claim(
    conn: ASGIConnection[Any, Any, Any, Any], services: EdgeServices, principal: Principal
) -> tuple[str, SessionSnapshot | None]:
    """This connection's lease, and the snapshot of the session it resumes (``?session_id=``: the
    WebSocket's and a WebRTC call's); the session's live connection is taken over."""
    lease = secrets.token_hex(12)
    session_id = conn.query_params.get("session_id")
    if session_id is None:
        return lease, None
    try:
        async with asyncio.timeout(services.settings.limits.handshake_timeout_s):
            return lease, await services.sessions.claim(session_id, principal.key_id, lease)
    except TimeoutError as exc:
        raise HandshakeTimeout("loading the session took too long: try again") from exc


def refused(refusal: VoicemeshError) -> EdgeError:
    """``refusal`` as the edge answers it, counted as a session refused (every transport's handshake)."""
    exc = edge_error(refusal)
    SESSIONS_REFUSED.labels(exc.code, str(exc.status)).inc()
    return exc


async def deny(socket: WebSocket[Any, Any, Any], refusal: VoicemeshError, retry_after_s: int) -> None:
    exc = refused(refusal)
    body = json.dumps(exc.http_body()).encode()
    extensions: dict[str, Any] = dict(socket.scope.get("extensions") or {})
    if "websocket.http.response" in extensions:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if isinstance(exc, Draining):
            headers.append((b"retry-after", str(retry_after_s).encode()))
        start: WebSocketResponseStartEvent = {
            "type": "websocket.http.response.start",
            "status": exc.status,
            "headers": headers,
        }
        await socket.send(start)
        await socket.send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:  # servers without the extension answer a pre-accept close with 403
        await socket.close(code=4000 + exc.status, reason=exc.code)


__all__ = ["admit", "authenticate", "authenticate_token", "claim", "deny", "refused"]
