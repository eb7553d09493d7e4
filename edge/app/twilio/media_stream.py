"""``/v1/twilio/media-stream``: a phone call through Twilio Media Streams (``<Connect><Stream>``),
served as an ordinary Realtime session (``docs/phone.md``).

The handshake is Twilio's, checked before anything starts: its signature over the ``wss://`` URL
(403 without it, or when it does not match; the endpoint is off without an auth token), and a
draining edge refuses (503). Accepted, the stream's ``start`` says which call it is: its
credential is authenticated and admitted within the key's limits like any Realtime client's
(``edge/app/handshake.py``), and a session is made in the key's residency
(``edge/app/realtime_serve.py`` ``state_for``). The session is opened with the call's set-up
``session.update``; ``TwilioFrames`` then plays the client: Twilio's messages in, Realtime client
events out (an append per ``media``, a truncate after a barge-in), and ``run_session`` serves the
session as it serves a WebSocket client, timers, revocation and drain included. The call is
registered by its ``CallSid`` for its sidebands (``edge/app/calls.py``, ``edge/app/sideband.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections import deque
from collections.abc import Callable
from typing import Any

from litestar import websocket
from litestar.connection import WebSocket
from litestar.exceptions import WebSocketDisconnect
from litestar.params import SkipValidation

from edge.app.calls import LiveCall, calls_of
from edge.app.handshake import admit, authenticate_token, deny
from edge.app.realtime_serve import SocketTransport, new_session, run_session, state_for
from edge.app.services import EdgeServices
from edge.app.twilio import messages, signature
from edge.app.twilio.bridge import TwilioBridge
from edge.app.twilio.call_setup import CallSetup
from edge.shared.errors import BadRequest, Draining, HandshakeTimeout, edge_error
from edge.shared.state import SessionState
from edge.tenancy.auth import Principal
from wire.errors import VoicemeshError

log = logging.getLogger("voicemesh.edge.twilio")

PATH = "/v1/twilio/media-stream"
DISCONNECT = {"type": "websocket.disconnect", "code": 1000}


class TwilioFrames:
    """The session's receive: Twilio's messages read and turned into Realtime client events."""

    def __init__(self, socket: WebSocket[Any, Any, Any], bridge: TwilioBridge) -> None:
        self._socket = socket
        self._bridge = bridge
        self._queued: deque[str] = deque()
        self.stopped = False

    async def receive(self) -> dict[str, Any]:
        while True:
            if self._bridge.refused is not None:  # the call's voice or instructions were refused
                with contextlib.suppress(Exception):
                    await self._socket.close(code=1008, reason=self._bridge.refused)
                return dict(DISCONNECT)
            if not self._queued and (truncate := self._bridge.take_truncate()) is not None:
                self._queued.append(truncate)  # (after a barge-in: what the caller heard)
            if self._queued:
                return {"type": "websocket.receive", "text": self._queued.popleft()}
            event = await self._socket.receive()
            if event["type"] == "websocket.disconnect":
                return dict(event)
            message = self._parse(_payload(event))
            if isinstance(message, messages.Media):
                append = {"type": "input_audio_buffer.append", "audio": message.payload}
                return {"type": "websocket.receive", "text": json.dumps(append)}
            if isinstance(message, messages.Mark):
                self._bridge.played(message.name)
            elif isinstance(message, messages.Stop):
                self.stopped = True
                return dict(DISCONNECT)
            elif isinstance(message, messages.Dtmf):
                log.info("stream %s: DTMF %r (not used)", self._bridge.stream_sid, message.digit)

    def _parse(self, raw: str | bytes) -> messages.Message | None:
        try:
            return messages.parse(raw)
        except messages.BadMessage as exc:
            # Logged and ignored: one bad message must not hang up a call.
            log.warning("stream %s: message ignored: %s", self._bridge.stream_sid, exc)
            return None


def _payload(event: Any) -> str | bytes:
    text, data = event.get("text"), event.get("bytes")
    return text if isinstance(text, str) else data if isinstance(data, bytes) else b""


async def _read_start(socket: WebSocket[Any, Any, Any], timeout_s: float) -> messages.Start:
    """``connected`` then ``start``, as Twilio sends them first."""
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                event = await socket.receive()
                if event["type"] == "websocket.disconnect":
                    raise WebSocketDisconnect(detail="the stream ended before its start message")
                try:
                    message = messages.parse(_payload(event))
                except messages.BadMessage as exc:
                    raise BadRequest(
                        f"not a Twilio message before `start`: {exc}", code="twilio_bad_start"
                    ) from None
                if isinstance(message, messages.Start):
                    return message
                if not isinstance(message, messages.Connected | None):
                    raise BadRequest("Twilio's `start` message must come first", code="twilio_bad_start")
    except TimeoutError as exc:
        raise HandshakeTimeout("no `start` message from Twilio in time") from exc


@websocket(PATH)
async def media_stream(socket: WebSocket[Any, Any, Any], services: SkipValidation[EdgeServices]) -> None:
    settings = services.settings
    try:
        signature.check(socket, settings.twilio, "wss")
        if services.draining:
            raise Draining("this edge is shutting down: Twilio's next call goes to another edge")
    except VoicemeshError as exc:  # refused before anything starts
        log.warning("twilio stream refused: %s", exc)
        await deny(socket, exc, settings.resume.retry_after_s)
        return
    await socket.accept()
    try:
        start = await _read_start(socket, settings.limits.handshake_timeout_s)
        setup = CallSetup.of(start, settings.twilio.api_key)
        principal = await authenticate_token(services, setup.token)
        slot = await admit(services, principal)
    except VoicemeshError as exc:  # (the socket is open: a close with the refusal's code)
        log.warning("twilio stream refused after its start: %s", exc)
        with contextlib.suppress(Exception):
            await socket.close(code=1008, reason=edge_error(exc).code)
        return
    except WebSocketDisconnect:
        return
    try:
        state = state_for(services, principal, None, setup.residency)
        await _serve_call(socket, services, start, setup, state, principal)
    except VoicemeshError as exc:  # a residency outside the key's
        with contextlib.suppress(Exception):
            await socket.close(code=1008, reason=edge_error(exc).code)
    finally:
        await services.limits.release(slot)


async def _serve_call(
    socket: WebSocket[Any, Any, Any], services: EdgeServices, start: messages.Start, setup: CallSetup,
    state: SessionState, principal: Principal,
) -> None:  # fmt: skip
    async def to_twilio(text: str) -> None:
        await socket.send_text(text)

    bridge = TwilioBridge(start.stream_sid, to_twilio)
    frames = TwilioFrames(socket, bridge)

    transport = _CallTransport(socket, bridge, frames)
    live = transport.live = LiveCall(start.call_sid, principal.key_id, transport.close)
    log.info("call %s (stream %s) as session %s", start.call_sid, start.stream_sid, state.id)
    session, keyed = new_session(services, state, secrets.token_hex(12), principal, transport)

    async def opening() -> None:  # the call's set-up, before any event of its sidebands
        await session.open(None)
        await session.handle(setup.update_json())

    calls = calls_of(socket)
    calls.add(live)  # the call's sidebands find it by its CallSid (``GET /v1/realtime?call_id=CA...``)
    try:
        await run_session(services, session, keyed, transport, opening=opening, call=live)
    finally:
        calls.remove(live)
    with contextlib.suppress(Exception):  # Twilio's `stop`: the call moves on to its next TwiML verb
        await socket.close(code=1000, reason="stream stopped" if frames.stopped else "")


class _CallTransport(SocketTransport):
    """The session's ``Transport``: Twilio's messages in (``TwilioFrames``), the session's events
    out through the bridge (audio as ``media``, the rest kept inside the edge) and to the call's
    sidebands."""

    gone = "Twilio went away"

    def __init__(self, socket: WebSocket[Any, Any, Any], bridge: TwilioBridge, frames: TwilioFrames) -> None:
        super().__init__(socket)
        self._bridge = bridge
        self._frames = frames
        self.live: LiveCall | None = None

    async def receive(self) -> Any:
        return await self._frames.receive()

    async def write(self, text: str) -> None:
        await self._bridge.relay(text)

    async def send(self, text: str) -> None:
        await super().send(text)
        if self.live is not None:
            self.live.publish(text)

    def attach(self, direct: Callable[[bytes], bool]) -> Callable[[], None]:
        return lambda: None  # no fast path: Twilio's frames are JSON of its own


__all__ = ["PATH", "TwilioFrames", "media_stream"]
