"""The region's HTTP surface (Litestar): ``/v1/turns`` (WebSocket), ``/health``, ``/metrics``.

Every request passes ``RegionGuard`` first: it checks the edge's region token
(``wire.region_auth``) on the turn WebSocket's handshake and on every HTTP request. The one
exception is ``/health`` without any ``Authorization`` header (kubelet and start-up probes): it
answers ready/not-ready and nothing else. With a valid token it is the full body the router's
prober reads (load, queue, models, voices, LLM URL, error text). ``GET /metrics`` also takes the
scraper's metrics credential, which is good for nothing else (not even the full ``/health``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from litestar import Litestar, MediaType, Request, Response, WebSocket, get, websocket
from litestar.exceptions import WebSocketDisconnect

from region.node import RegionNode
from region.session import TurnSession
from wire.region_auth import TokenVerifier
from wire.turn import TURN_PATH

log = logging.getLogger(__name__)

# Plain ASGI types: the guard works on raw messages, before Litestar's typed scopes exist.
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_AUTHENTICATED = "voicemesh.authenticated"
"""Scope key the guard sets: did this request carry a credential valid for its path? (Only
``/health`` reads it, and only a region token is valid there.)"""


class RegionGuard:
    """ASGI middleware in front of the whole app: refuse, with HTTP 401 and a reason, any request but
    a bare ``GET /health`` that lacks a valid token (or, for ``GET /metrics`` only, the metrics
    credential). ``verifier=None`` lets everything through (``--insecure-no-auth``)."""

    def __init__(self, app: ASGIApp, verifier: TokenVerifier | None) -> None:
        self._app = app
        self._verifier = verifier

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        if self._verifier is None:
            scope[_AUTHENTICATED] = True
            await self._app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if header is None and scope["type"] == "http" and scope["path"] == "/health":
            scope[_AUTHENTICATED] = False
            await self._app(scope, receive, send)
            return
        value = header.decode("latin-1") if header is not None else None
        if _is_metrics_read(scope):
            reason = self._verifier.metrics_refusal(value)
        else:
            reason = self._verifier.refusal(value)
        if reason is None:
            scope[_AUTHENTICATED] = True
            await self._app(scope, receive, send)
            return
        client = scope.get("client") or ("?", 0)
        log.warning("refused %s %s from %s: %s", scope["type"], scope["path"], client[0], reason)
        await _refuse(scope, receive, send, reason)


def _is_metrics_read(scope: Scope) -> bool:
    # Exact path and method: the metrics credential must not reach any other handler.
    return bool(scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == "/metrics")


async def _refuse(scope: Scope, receive: Receive, send: Send, reason: str) -> None:
    body = json.dumps({"error": {"code": "unauthorized", "message": reason}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="voicemesh-region", error="invalid_token"'),
    ]
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 4401, "reason": reason[:120]})
            return
        start, more = "websocket.http.response.start", "websocket.http.response.body"
    else:
        start, more = "http.response.start", "http.response.body"
    await send({"type": start, "status": 401, "headers": headers})
    await send({"type": more, "body": body})


class _SocketChannel:
    """Litestar's WebSocket as a ``session.Channel``: text and binary frames from one receive()."""

    def __init__(self, socket: WebSocket[Any, Any, Any]) -> None:
        self._socket = socket

    async def receive(self) -> str | bytes | None:
        event = await self._socket.receive()
        if event["type"] == "websocket.disconnect":
            return None
        data = event.get("bytes")
        if isinstance(data, bytes):
            return data
        return str(event.get("text") or "")

    async def send_text(self, data: str) -> None:
        await self._socket.send_text(data)

    async def send_bytes(self, data: bytes) -> None:
        await self._socket.send_bytes(data)


def create_app(node: RegionNode, *, verifier: TokenVerifier | None) -> ASGIApp:
    """The region app behind its ``RegionGuard`` (``verifier=None``: no authentication)."""

    @get("/health", sync_to_thread=False)
    def health(request: Request[Any, Any, Any]) -> Response[dict[str, Any]]:
        status, body = node.health()
        if not request.scope.get(_AUTHENTICATED):
            body = {"status": "ready" if status == 200 else "not ready"}
        return Response(body, status_code=status, media_type=MediaType.JSON)

    @get("/metrics", sync_to_thread=False)
    def metrics() -> Response[bytes]:
        return Response(node.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @websocket(TURN_PATH)
    async def turns(socket: WebSocket[Any, Any, Any]) -> None:
        await socket.accept()
        try:
            await TurnSession(node, _SocketChannel(socket)).serve()
        except WebSocketDisconnect:
            pass  # the session has already cancelled its turn on the way out

    app: Any = Litestar(
        route_handlers=[health, metrics, turns], on_shutdown=[node.aclose],
        logging_config=None,  # Litestar's default replaces the root handler: the process's format stays
    )  # fmt: skip
    return RegionGuard(app, verifier)
