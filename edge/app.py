"""The edge's HTTP and WebSocket surface (Litestar).

* ``GET /v1/realtime``  WebSocket, OpenAI Realtime protocol (auth at the handshake)
* ``POST /v1/realtime/client_secrets``  mint a short-lived ``ek_`` secret from an API key
* ``GET /status``  the router's view of the regions plus the edge's own counters (authenticated)
* ``GET /health``  liveness, unauthenticated
* ``GET /metrics``  Prometheus metrics of the edge and its router, unauthenticated (as a region's)

Refusals at the handshake are real HTTP responses (401 bad credentials, 429 limits) sent through
the ASGI WebSocket denial-response extension, with a JSON body saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from litestar import Litestar, Request, get, post, websocket
from litestar.connection import ASGIConnection, WebSocket
from litestar.exceptions import HTTPException, NotAuthorizedException, WebSocketDisconnect
from litestar.response import Response as HttpResponse
from litestar.status_codes import HTTP_401_UNAUTHORIZED, HTTP_429_TOO_MANY_REQUESTS
from litestar.types.asgi_types import WebSocketResponseStartEvent

from edge.auth import KEY_SUBPROTOCOL, Principal, bearer_token
from edge.events import error_event
from edge.limits import RateLimited, TooManySessions
from edge.metrics import CONTENT_TYPE, SESSIONS_OPEN, render
from edge.services import EdgeServices
from edge.session import RealtimeSession
from edge.session_update import initial_state
from edge.web import web_route_handlers  # issue 7: talk page `/`, ops page `/ops` (edge/web.py)
from wire.errors import ProtocolError, VoicemeshError

log = logging.getLogger("voicemesh.edge")


def _status_for(exc: ProtocolError) -> int:
    return (
        HTTP_429_TOO_MANY_REQUESTS
        if isinstance(exc, RateLimited | TooManySessions)
        else HTTP_401_UNAUTHORIZED
    )


def _services(conn: ASGIConnection[Any, Any, Any, Any]) -> EdgeServices:
    services: EdgeServices = conn.app.state.services
    return services


async def _authenticate(conn: ASGIConnection[Any, Any, Any, Any], subprotocols: list[str]) -> Principal:
    services = _services(conn)
    principal = await services.auth.authenticate(bearer_token(conn.headers, subprotocols))
    services.limits.check_rate(principal.key_id)
    return principal


async def _deny(socket: WebSocket[Any, Any, Any], exc: ProtocolError) -> None:
    body = json.dumps(
        {"error": {"type": "invalid_request_error", "code": exc.code, "message": exc.message}}
    ).encode()
    extensions: dict[str, Any] = dict(socket.scope.get("extensions") or {})
    if "websocket.http.response" in extensions:
        start: WebSocketResponseStartEvent = {
            "type": "websocket.http.response.start",
            "status": _status_for(exc),
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
        await socket.send(start)
        await socket.send({"type": "websocket.http.response.body", "body": body, "more_body": False})
    else:  # servers without the extension answer a pre-accept close with 403
        await socket.close(code=4401 if _status_for(exc) == HTTP_401_UNAUTHORIZED else 4429, reason=exc.code)


@websocket("/v1/realtime")
async def realtime(socket: WebSocket[Any, Any, Any]) -> None:
    services = _services(socket)
    subprotocols: list[str] = list(socket.scope.get("subprotocols") or [])
    try:
        principal = await _authenticate(socket, subprotocols)
        services.limits.acquire(principal.key_id)
    except ProtocolError as exc:
        await _deny(socket, exc)
        return
    try:
        # Browsers offer ("realtime", "openai-insecure-api-key.KEY"): answer with the first one that
        # is not the key, as OpenAI does.
        chosen = next((p for p in subprotocols if not p.startswith(KEY_SUBPROTOCOL)), None)
        await socket.accept(subprotocols=chosen)
        await _serve(socket, services, principal)
    finally:
        services.limits.release(principal.key_id)


async def _serve(socket: WebSocket[Any, Any, Any], services: EdgeServices, principal: Principal) -> None:
    settings = services.settings
    state = initial_state(settings, key_id=principal.key_id, model=socket.query_params.get("model", ""))
    lock = asyncio.Lock()

    async def send(text: str) -> None:
        async with lock:  # the session, its response and its player all write to one socket
            try:
                await socket.send_text(text)
            except WebSocketDisconnect as exc:
                raise ConnectionError("the client went away") from exc

    session = RealtimeSession(services, state, send)
    services.open_sessions += 1
    SESSIONS_OPEN.inc()
    try:
        await services.sessions.save(state)
        await session.open()
        async with asyncio.timeout(settings.limits.max_session_s):
            async for raw in _frames(socket):
                await session.handle(raw)
    except TimeoutError:
        with contextlib.suppress(Exception):
            await send(error_event(ProtocolError("maximum session duration reached", code="session_expired")))
            await socket.close(code=1000, reason="session_expired")
    except (WebSocketDisconnect, ConnectionError):
        pass
    finally:
        services.open_sessions -= 1
        SESSIONS_OPEN.dec()
        await session.close()
        with contextlib.suppress(Exception):
            await services.sessions.delete(state.id)


async def _frames(socket: WebSocket[Any, Any, Any]) -> AsyncIterator[str | bytes]:
    while True:
        message = await socket.receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        data = message.get("bytes")
        yield text if isinstance(text, str) else data if isinstance(data, bytes) else b""


@post("/v1/realtime/client_secrets", status_code=200)
async def client_secrets(request: Request[Any, Any, Any]) -> dict[str, Any]:
    services = _services(request)
    try:
        principal = await _authenticate(request, [])
    except ProtocolError as exc:
        raise HTTPException(
            status_code=_status_for(exc), detail=exc.message, extra={"code": exc.code}
        ) from exc
    if principal.via == "client_secret":
        raise NotAuthorizedException("client secrets cannot mint client secrets: use an API key")
    body: dict[str, Any] = {}
    raw = await request.body()
    if raw:
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=f"body is not JSON: {exc}") from exc
    seconds = (body.get("expires_after") or {}).get("seconds") if isinstance(body, dict) else None
    if seconds is not None and (not isinstance(seconds, int) or not 10 <= seconds <= 7200):
        raise HTTPException(status_code=400, detail="expires_after.seconds must be an integer in [10, 7200]")
    value, expires_at = await services.auth.mint_client_secret(principal, seconds)
    session = body.get("session") if isinstance(body, dict) else None
    return {
        "value": value,
        "expires_at": expires_at,
        "session": session
        if isinstance(session, dict)
        else {"type": "realtime", "object": "realtime.session"},
    }


@get("/status")
async def status(request: Request[Any, Any, Any]) -> dict[str, Any]:
    services = _services(request)
    try:
        await _authenticate(request, [])
    except ProtocolError as exc:
        raise HTTPException(status_code=_status_for(exc), detail=exc.message) from exc
    return {
        "edge": {"open_sessions": services.open_sessions, "vad": services.vad.status()},
        "router": services.router.status(),
    }


@get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


@get("/metrics", sync_to_thread=False)
def metrics() -> HttpResponse[bytes]:
    return HttpResponse(render(), media_type=CONTENT_TYPE)


def _error_response(_: Request[Any, Any, Any], exc: VoicemeshError) -> HttpResponse[dict[str, Any]]:
    return HttpResponse({"error": {"code": exc.code, "message": exc.message}}, status_code=400)


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
