"""The region's HTTP surface (Litestar): ``/v1/turns`` (WebSocket), ``/health``, ``/metrics``."""

from __future__ import annotations

from typing import Any

from litestar import Litestar, MediaType, Response, WebSocket, get, websocket
from litestar.exceptions import WebSocketDisconnect

from region.node import RegionNode
from region.session import TurnSession
from wire.turn import TURN_PATH


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


def create_app(node: RegionNode) -> Litestar:
    @get("/health", sync_to_thread=False)
    def health() -> Response[dict[str, Any]]:
        status, body = node.health()
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

    return Litestar(route_handlers=[health, metrics, turns], on_shutdown=[node.aclose])
