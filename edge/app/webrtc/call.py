"""One WebRTC call: its peer connection, the ``RealtimeSession`` it carries, and the call's life.

The call is answered at once (``Call.answer``: the session is opened, its events held until the data
channel opens); it must connect within ``webrtc_connect_s`` (ICE and DTLS), else it is closed and
all it held is freed. Connected, the session is served as the WebSocket's is
(``edge/app/realtime_serve.py`` ``run_session``), with the data channel for frames and the caller's
Opus track read into appends; it ends when the peer goes (its connection fails or closes, or stays
down for ``webrtc_connect_s``), the data channel closes, or the session ends.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

from edge.app.calls import LiveCall
from edge.app.realtime_serve import new_session, run_session
from edge.app.services import EdgeServices
from edge.app.webrtc.bridge import EventBridge
from edge.app.webrtc.tracks import read_inbound
from edge.realtime.key_session import KeySession
from edge.realtime.session import RealtimeSession
from edge.realtime.session_snapshot import SessionSnapshot
from edge.shared.errors import BadCallRequest
from edge.shared.state import SessionState
from edge.tenancy.auth import Principal
from wire.tasks import cancel_and_wait

log = logging.getLogger("voicemesh.edge")

CHANNEL = "oai-events"
_DISCONNECT = {"type": "websocket.disconnect"}


class Call:
    def __init__(
        self, call_id: str, services: EdgeServices, state: SessionState, principal: Principal, lease: str
    ) -> None:
        self.id = call_id
        self.key_id = principal.key_id
        self._services = services
        self._connect_s = services.settings.webrtc_connect_s
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.bridge = EventBridge(state)
        self.live = LiveCall(call_id, principal.key_id, self.close)
        """The call as its sidebands find it (``edge/app/calls.py``)."""
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._direct: Callable[[bytes], bool] = lambda _raw: False
        self._connected = asyncio.Event()
        self._gone = asyncio.Event()
        self._inbound: Any = None
        self.session: RealtimeSession
        self._keyed: KeySession
        self.session, self._keyed = new_session(services, state, lease, principal, self)
        self.pc.on("connectionstatechange", self._state_changed)
        self.pc.on("datachannel", self._channel)
        self.pc.on("track", self._track)

    async def answer(self, offer_sdp: str) -> str:
        """The SDP answer to the client's offer (all candidates in it: no trickle);
        ``BadCallRequest`` for an offer aiortc cannot use."""
        try:
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=offer_sdp, type="offer"))
            audio = [t for t in self.pc.getTransceivers() if t.kind == "audio"]
            if not audio:
                raise BadCallRequest("the SDP offer has no audio: offer one audio m-line (sendrecv)")
            audio[0].sender.replaceTrack(self.bridge.track)
            audio[0].direction = "sendrecv"
            await self.pc.setLocalDescription(await self.pc.createAnswer())
        except BadCallRequest:
            raise
        except Exception as exc:  # aiortc's parse and negotiation errors have no common base
            raise BadCallRequest(f"the SDP offer could not be used: {exc or type(exc).__name__}") from exc
        sdp: str = self.pc.localDescription.sdp
        return sdp

    @property
    def ended(self) -> bool:
        """The peer went or the call was closed (its resources are being freed)."""
        return self._gone.is_set()

    async def configure(self, session: dict[str, Any] | None, resumed: SessionSnapshot | None = None) -> None:
        """Open the session, new or ``resumed`` (``session.created``, held for the data channel), with
        the offer's ``session`` config applied as a ``session.update`` would: ``BadCallRequest`` if
        refused."""
        await self.session.open(resumed)
        if session is not None:
            await self.session.handle(json.dumps({"type": "session.update", "session": session}))
            refusal = self.bridge.queued_error()
            if refusal is not None:
                raise BadCallRequest(f"the session config was refused: {refusal}")

    async def run(self, done: Callable[[], Awaitable[None]]) -> None:
        """The call's life; ``done`` (the slot released, the call forgotten) runs however it ends."""
        reader: asyncio.Task[None] | None = None
        try:
            try:
                async with asyncio.timeout(self._connect_s):
                    await self._connected.wait()
            except TimeoutError:
                log.info("webrtc call %s: not connected within %g s: closed", self.id, self._connect_s)
                return
            if self._gone.is_set():
                return
            if self._inbound is not None:
                reader = asyncio.create_task(self._read(self._inbound))
            await run_session(self._services, self.session, self._keyed, self, call=self.live)
        finally:
            try:
                await cancel_and_wait(reader, ignore=(Exception,))
                with contextlib.suppress(Exception):
                    await self._keyed.aclose()
                    await self.session.close()
                with contextlib.suppress(Exception):
                    await self.pc.close()
            finally:
                await done()

    # -- the transport run_session serves the session over ------------------------------------------

    async def receive(self) -> dict[str, Any]:
        return await self._inbox.get()

    async def send(self, text: str) -> None:
        await self.bridge.send(text)
        self.live.publish(text)

    async def close(self, code: int, reason: str) -> None:
        """The session ended the call (drained, taken over, revoked, timed out)."""
        self._end(f"closed by the edge ({code} {reason})")
        await self.pc.close()

    def attach(self, direct: Callable[[bytes], bool]) -> Callable[[], None]:
        self._direct = direct

        def detach() -> None:
            self._direct = lambda _raw: False

        return detach

    # -- the peer's events ----------------------------------------------------------------------------

    async def _read(self, track: Any) -> None:
        try:
            await read_inbound(track, self._append)
        except Exception:  # (a bad frame must not go unseen: the caller would just stop being heard)
            log.exception("webrtc call %s: the caller's audio track failed", self.id)
            self._end("audio track failed")

    def _append(self, pcm: bytes) -> None:
        """The caller's audio, as an ``input_audio_buffer.append``: the WebSocket's own path, with its
        limits (event rate, VAD back-pressure) and the idle timer."""
        raw = b'{"type":"input_audio_buffer.append","audio":"' + base64.b64encode(pcm) + b'"}'
        if not self._direct(raw):
            self._inbox.put_nowait({"type": "websocket.receive", "bytes": raw})

    def _state_changed(self) -> None:
        state = self.pc.connectionState
        if state == "connected":
            self._connected.set()
        elif state in ("failed", "closed"):
            self._end(f"connection {state}")
        elif state == "disconnected":  # may come back (ICE restarts are not offered: it rarely does)
            asyncio.get_running_loop().call_later(self._connect_s, self._still_down)

    def _still_down(self) -> None:
        if self.pc.connectionState == "disconnected":
            self._end("connection down")
            asyncio.get_running_loop().create_task(self.pc.close())

    def _end(self, why: str) -> None:
        if not self._gone.is_set():
            log.info("webrtc call %s: %s", self.id, why)
            self._gone.set()
            self._connected.set()  # (wakes a call still waiting to connect)
            self._inbox.put_nowait(_DISCONNECT)

    def _channel(self, channel: Any) -> None:
        if channel.label != CHANNEL:
            return
        self.bridge.attach(channel)
        channel.on("message", self._message)
        channel.on("close", lambda: self._end("data channel closed"))

    def _message(self, data: str | bytes) -> None:
        key = "text" if isinstance(data, str) else "bytes"
        self._inbox.put_nowait({"type": "websocket.receive", key: data})

    def _track(self, track: Any) -> None:
        if track.kind == "audio" and self._inbound is None:
            self._inbound = track


__all__ = ["CHANNEL", "Call"]
