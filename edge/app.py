"""The edge's HTTP and WebSocket surface (Litestar).

* ``GET /v1/realtime``  WebSocket, OpenAI Realtime protocol (auth at the handshake)
* ``POST /v1/realtime/client_secrets``  mint a short-lived ``ek_`` secret from an API key
* ``GET /status``  the router's view of the regions plus the edge's own counters (admin scope)
* ``GET /health``  liveness, unauthenticated
* ``GET /metrics``  Prometheus metrics of the edge and its router, unauthenticated (as a region's)

Refusals are real HTTP responses with a JSON body saying why (``{"error": {"code", "message"}}``):
400 bad request, 401 bad credentials, 403 missing scope, 408 handshake too slow, 429 limits, 431
oversized credential, 404 unknown ``session_id`` (resume), 503 draining (with ``Retry-After``).
At the handshake they go through the ASGI WebSocket denial-response extension. The handshake is
bounded in time, and so is a session: ``max_session_s`` in all, and ``idle_timeout_s`` without a
client event (an ``error`` event says which, then the socket closes).

``/v1/realtime?session_id=ID`` resumes a session (``docs/resume.md``): the same key's session, from
its snapshot in the shared store, on whichever edge the client reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

from litestar import Litestar, Request, get, post, websocket
from litestar.connection import ASGIConnection, WebSocket
from litestar.exceptions import WebSocketDisconnect
from litestar.response import Response as HttpResponse
from litestar.types.asgi_types import WebSocketResponseStartEvent

from edge.auth import (
    ADMIN,
    KEY_SUBPROTOCOL,
    CredentialTooLarge,
    Forbidden,
    NotAuthenticated,
    Principal,
    bearer_token,
)
from edge.client_secrets import MintRequest
from edge.events import error_event
from edge.limits import RateLimited, TooManySessions
from edge.metrics import CONTENT_TYPE, SESSIONS_OPEN, render
from edge.services import EdgeServices
from edge.session import RealtimeSession
from edge.session_snapshot import SessionNotFound, SessionSnapshot
from edge.session_update import initial_state
from edge.web import web_route_handlers  # issue 7: talk page `/`, ops page `/ops` (edge/web.py)
from wire.errors import ProtocolError, VoicemeshError

log = logging.getLogger("voicemesh.edge")


class HandshakeTimeout(ProtocolError):
    code = "handshake_timeout"


class SessionIdle(ProtocolError):
    code = "session_idle_timeout"


class SessionExpired(ProtocolError):
    code = "session_expired"


class Draining(ProtocolError):
    """The edge is shutting down: connect again (a load balancer sends the client to another edge)."""

    code = "edge_draining"


def _status_for(exc: VoicemeshError) -> int:
    """The HTTP status of a refusal: the most specific class first."""
    for kind, status in (
        (CredentialTooLarge, 431),
        (NotAuthenticated, 401),
        (Forbidden, 403),
        (HandshakeTimeout, 408),
        (RateLimited | TooManySessions, 429),
        (SessionNotFound, 404),
        (Draining, 503),
    ):
        if isinstance(exc, kind):
            return status
    return 400


def _error_body(exc: VoicemeshError) -> dict[str, Any]:
    return {"error": {"type": "invalid_request_error", "code": exc.code, "message": exc.message}}


def _services(conn: ASGIConnection[Any, Any, Any, Any]) -> EdgeServices:
    services: EdgeServices = conn.app.state.services
    return services


async def _authenticate(conn: ASGIConnection[Any, Any, Any, Any], subprotocols: list[str]) -> Principal:
    services = _services(conn)
    try:
        # Credentials may be looked up in Redis: bounded there too, this bounds the whole check.
        async with asyncio.timeout(services.settings.limits.handshake_timeout_s):
            return await services.auth.authenticate(bearer_token(conn.headers, subprotocols))
    except TimeoutError as exc:
        raise HandshakeTimeout("checking the credentials took too long: try again") from exc


async def _admit(socket: WebSocket[Any, Any, Any], subprotocols: list[str]) -> Principal:
    """Who is connecting, within their key's connect rate and session cap (a slot is taken)."""
    services = _services(socket)
    principal = await _authenticate(socket, subprotocols)
    services.limits.check_rate(principal.key_id)
    services.limits.acquire(principal.key_id)
    return principal


async def _deny(socket: WebSocket[Any, Any, Any], exc: ProtocolError) -> None:
    body = json.dumps(_error_body(exc)).encode()
    extensions: dict[str, Any] = dict(socket.scope.get("extensions") or {})
    if "websocket.http.response" in extensions:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if isinstance(exc, Draining):
            headers.append((b"retry-after", str(_services(socket).settings.resume.retry_after_s).encode()))
        start: WebSocketResponseStartEvent = {
            "type": "websocket.http.response.start",
            "status": _status_for(exc),
            "headers": headers,
        }
        await socket.send(start)
        await socket.send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:  # servers without the extension answer a pre-accept close with 403
        await socket.close(code=4000 + _status_for(exc), reason=exc.code)


@websocket("/v1/realtime")
async def realtime(socket: WebSocket[Any, Any, Any]) -> None:
    services = _services(socket)
    subprotocols: list[str] = list(socket.scope.get("subprotocols") or [])
    try:
        if services.draining:
            raise Draining("this edge is shutting down: connect again (resume with session_id)")
        principal = await _admit(socket, subprotocols)
    except ProtocolError as exc:
        await _deny(socket, exc)
        return
    try:
        lease, resumed = await _claim(socket, services, principal)
    except ProtocolError as exc:
        services.limits.release(principal.key_id)
        await _deny(socket, exc)
        return
    try:
        # Browsers offer ("realtime", "openai-insecure-api-key.KEY"): answer with the first one that
        # is not the key, as OpenAI does.
        chosen = next((p for p in subprotocols if not p.startswith(KEY_SUBPROTOCOL)), None)
        await socket.accept(subprotocols=chosen)
        await _serve(socket, services, principal, lease, resumed)
    finally:
        services.limits.release(principal.key_id)


async def _claim(
    socket: WebSocket[Any, Any, Any], services: EdgeServices, principal: Principal
) -> tuple[str, SessionSnapshot | None]:
    """This connection's lease, and the snapshot of the session it resumes (``?session_id=``)."""
    lease = secrets.token_hex(12)
    session_id = socket.query_params.get("session_id")
    if session_id is None:
        return lease, None
    try:
        async with asyncio.timeout(services.settings.limits.handshake_timeout_s):
            return lease, await services.sessions.claim(session_id, principal.key_id, lease)
    except TimeoutError as exc:
        raise HandshakeTimeout("loading the session took too long: try again") from exc


async def _serve(
    socket: WebSocket[Any, Any, Any], services: EdgeServices, principal: Principal, lease: str,
    resumed: SessionSnapshot | None,
) -> None:  # fmt: skip
    settings = services.settings
    if resumed is not None:
        state = resumed.state
    else:
        state = initial_state(settings, key_id=principal.key_id, model=socket.query_params.get("model", ""))
    lock = asyncio.Lock()

    async def send(text: str) -> None:
        async with lock:  # the session, its response and its player all write to one socket
            try:
                await socket.send_text(text)
            except WebSocketDisconnect as exc:
                raise ConnectionError("the client went away") from exc

    async def close(code: int, reason: str) -> None:
        await socket.close(code=code, reason=reason)

    session = RealtimeSession(services, state, send, close, lease=lease)
    services.open_sessions += 1
    SESSIONS_OPEN.inc()
    try:
        await session.open(resumed)
        async for raw in _frames(socket, settings.limits.idle_timeout_s, settings.limits.max_session_s):
            if session.ended is not None:
                break  # taken over or drained: the socket is closed, late frames are not served
            await session.handle(raw)
    except (SessionIdle, SessionExpired) as exc:
        with contextlib.suppress(Exception):
            await send(error_event(exc))
        await session.close()  # before the close frame: the client may reconnect the moment it reads it
        with contextlib.suppress(Exception):
            await socket.close(code=1000, reason=exc.code)
    except (WebSocketDisconnect, ConnectionError):
        pass
    finally:
        services.open_sessions -= 1
        SESSIONS_OPEN.dec()
        await session.close()  # the snapshot stays: the client may resume (``docs/resume.md``)


async def _frames(
    socket: WebSocket[Any, Any, Any], idle_s: float, max_session_s: float
) -> AsyncIterator[str | bytes]:
    """The client's frames; raises ``SessionIdle`` or ``SessionExpired`` when its time is up."""
    loop = asyncio.get_running_loop()
    ends_at = loop.time() + max_session_s
    while True:
        # One timeout per receive, the nearer of the two deadlines (no nested timeouts).
        try:
            async with asyncio.timeout(min(idle_s, ends_at - loop.time())):
                message = await socket.receive()
        except TimeoutError:
            if loop.time() >= ends_at:
                raise SessionExpired("maximum session duration reached") from None
            raise SessionIdle(
                f"no client event for {idle_s:g} s: session closed (send events, or reconnect)"
            ) from None
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        data = message.get("bytes")
        yield text if isinstance(text, str) else data if isinstance(data, bytes) else b""


@post("/v1/realtime/client_secrets", status_code=200)
async def client_secrets(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """OpenAI's body (``expires_after``, ``session``) plus ``voicemesh.single_use`` (a secret good
    for one handshake). Minting has its own rate bucket per key, apart from connects."""
    services = _services(request)
    principal = await _authenticate(request, [])
    if principal.via == "client_secret":
        raise Forbidden("client secrets cannot mint client secrets: use an API key")
    services.mint_limits.check_rate(principal.key_id)
    mint = MintRequest.parse(await request.body())
    value, expires_at = await services.auth.secrets.mint(principal.key_id, mint)
    return {
        "value": value,
        "expires_at": expires_at,
        "session": mint.session or {"type": "realtime", "object": "realtime.session"},
    }


@get("/status")
async def status(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """Operations data: admin scope only (a browser's client secret never has it)."""
    services = _services(request)
    (await _authenticate(request, [])).require(ADMIN)
    return {
        "edge": {
            "open_sessions": services.open_sessions,
            "sessions": sorted(services.sessions.live),  # which edge serves a session (edge drills)
            "draining": services.draining,
            "vad": services.vad.status(),
            "store": services.store.status(),
        },
        "router": services.router.status(),
    }


@get("/health")
async def health(request: Request[Any, Any, Any]) -> HttpResponse[dict[str, str]]:
    """``draining`` (503) once SIGTERM arrived: load balancers stop sending new clients here."""
    services = _services(request)
    if services.draining:
        headers = {"retry-after": str(services.settings.resume.retry_after_s)}
        return HttpResponse({"status": "draining"}, status_code=503, headers=headers)
    return HttpResponse({"status": "ok"})


@get("/metrics", sync_to_thread=False)
def metrics() -> HttpResponse[bytes]:
    return HttpResponse(render(), media_type=CONTENT_TYPE)


def _error_response(_: Request[Any, Any, Any], exc: VoicemeshError) -> HttpResponse[dict[str, Any]]:
    return HttpResponse(_error_body(exc), status_code=_status_for(exc))


def create_app(services: EdgeServices) -> Litestar:
    async def startup(app: Litestar) -> None:
        app.state.services = services
        await services.start()

    async def shutdown(app: Litestar) -> None:
        await services.aclose()

    return Litestar(
        route_handlers=[realtime, client_secrets, status, health, metrics, *web_route_handlers()],  # issue 7
        on_startup=[startup],
        on_shutdown=[shutdown],
        exception_handlers={VoicemeshError: _error_response},
        debug=False,
    )


__all__ = ["create_app"]
