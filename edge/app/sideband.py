"""``GET /v1/realtime?call_id=ID``: an application server's sideband on a live call (OpenAI's
"server-side controls"): every server event of the call's session (its audio excepted), and client
events into it (``session.update`` with tools, ``conversation.item.create`` with a
``function_call_output``, ``response.create``, ...), so a trusted server runs the call's tools.

Admission is the WebSocket's credentials and connect rate, with no session slot (the call holds
one); the call must be live on this edge and the key's (404 / 403, answered at the handshake). The
sideband going away leaves the call running; the call ending closes its sidebands (1000).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from litestar.connection import WebSocket

from edge.app.calls import LiveCall, Sideband, calls_of
from edge.app.handshake import deny
from edge.app.services import EdgeServices
from edge.tenancy.auth import Principal
from wire.errors import VoicemeshError
from wire.tasks import cancel_and_wait


async def serve_sideband(
    socket: WebSocket[Any, Any, Any], services: EdgeServices, principal: Principal, call_id: str,
    subprotocol: str | None,
) -> None:  # fmt: skip
    try:
        await services.limits.check_rate(principal.key_id, principal.policy)
        call = calls_of(socket).find(call_id, principal.key_id)
        sideband = call.join()
    except VoicemeshError as exc:
        await deny(socket, exc, services.settings.resume.retry_after_s)
        return
    try:
        await socket.accept(subprotocols=subprotocol)
        reader = asyncio.create_task(_read(socket, call), name=f"sideband {call_id} in")
        writer = asyncio.create_task(_write(socket, sideband), name=f"sideband {call_id} out")
        try:
            await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            await cancel_and_wait(reader, writer, ignore=(Exception,))
    finally:
        call.leave(sideband)


async def _read(socket: WebSocket[Any, Any, Any], call: LiveCall) -> None:
    """The sideband's client events, into the call's session (in order with the call's own)."""
    while True:
        event = await socket.receive()
        if event["type"] == "websocket.disconnect":
            return
        raw = event.get("text") if event.get("text") is not None else event.get("bytes")
        if isinstance(raw, str | bytes):
            await call.inbound.put(raw)


async def _write(socket: WebSocket[Any, Any, Any], sideband: Sideband) -> None:
    while (text := await sideband.outbox.get()) is not None:
        await socket.send_text(text)
    code, reason = sideband.closing or (1000, "")
    with contextlib.suppress(Exception):
        await socket.close(code=code, reason=reason)


__all__ = ["serve_sideband"]
