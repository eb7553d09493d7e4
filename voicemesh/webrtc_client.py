"""A Realtime caller over WebRTC (aiortc), as a browser is one to OpenAI: it posts its SDP offer to
``/v1/realtime/calls``, speaks PCM on an Opus track, records the track it hears and reads the
server events of the ``oai-events`` data channel. Tests and benchmarks use it.

    async with WebRtcCaller.connect(base_url, api_key) as caller:
        await caller.wait_for("session.created")
        caller.speak(pcm24k)
        await caller.wait_for("response.done")
        heard = caller.heard  # 24 kHz PCM16 mono
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

from edge.app.webrtc.tracks import RATE, OutboundAudio, read_inbound
from wire.tasks import cancel_and_wait


class CallRefused(Exception):
    """The edge answered the offer with an error (``status``, and its JSON body's message)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body


class WebRtcCaller:
    def __init__(self) -> None:
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.mic = OutboundAudio(lambda _id: None)
        """What the caller says: ``speak`` queues PCM on it, silence otherwise."""
        self.channel: Any = self.pc.createDataChannel("oai-events")
        self.events: list[dict[str, Any]] = []
        self.heard = bytearray()
        """Everything the answer track played, 24 kHz PCM16 mono (silence included)."""
        self.arrivals: list[tuple[float, int, int]] = []
        """When each piece of ``heard`` arrived (monotonic time) and its byte span in it."""
        self.call_url: str | None = None
        self._changed = asyncio.Event()
        self._heard_more = asyncio.Event()
        self._opened = asyncio.Event()
        self.ended = asyncio.Event()
        """Set when the data channel closes: the call ended (a hang-up, the edge closed it)."""
        self._recorder: asyncio.Task[None] | None = None
        self.pc.addTrack(self.mic)
        self.channel.on("open", self._opened.set)
        self.channel.on("message", self._message)
        self.channel.on("close", self.ended.set)
        self.pc.on("track", self._track)

    @classmethod
    @asynccontextmanager
    async def connect(
        cls, base_url: str, api_key: str, *, session: dict[str, Any] | None = None, model: str = "voicemesh",
        timeout_s: float = 30.0, session_id: str | None = None,
    ) -> AsyncIterator[WebRtcCaller]:  # fmt: skip
        """A connected call (``base_url``: ``http://host:port``), closed on exit. ``session`` is
        sent as OpenAI's multipart form does; without it the offer is plain ``application/sdp``.
        ``session_id`` resumes that session (``?session_id=``)."""
        caller = cls()
        params = {"model": model} if session_id is None else {"model": model, "session_id": session_id}
        try:
            await caller._offer(base_url, api_key, session, params, timeout_s)
            async with asyncio.timeout(timeout_s):
                await caller._opened.wait()
            yield caller
        finally:
            await caller.close()

    async def _offer(
        self, base_url: str, api_key: str, session: dict[str, Any] | None, params: dict[str, str],
        timeout_s: float,
    ) -> None:  # fmt: skip
        await self.pc.setLocalDescription(await self.pc.createOffer())
        sdp = self.pc.localDescription.sdp
        url = f"{base_url}/v1/realtime/calls"
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(timeout=timeout_s) as http:
            if session is None:
                headers["Content-Type"] = "application/sdp"
                response = await http.post(url, params=params, content=sdp, headers=headers)
            else:
                files = {"sdp": (None, sdp), "session": (None, json.dumps(session))}
                response = await http.post(url, params=params, files=files, headers=headers)
        if response.status_code != 201:
            raise CallRefused(response.status_code, response.text)
        self.call_url = response.headers.get("location")
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=response.text, type="answer"))

    def speak(self, pcm24k: bytes) -> None:
        """Say ``pcm24k`` (PCM16 mono at 24 kHz) now, in real time, after what is still being said."""
        self.mic.push(pcm24k)

    def send(self, event: dict[str, Any]) -> None:
        """One client event on the data channel."""
        self.channel.send(json.dumps(event))

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == type_]

    async def wait_for(self, type_: str, count: int = 1, within_s: float = 60.0) -> dict[str, Any]:
        """The ``count``-th event of ``type_`` (``within_s`` only stops a broken run from hanging)."""
        async with asyncio.timeout(within_s):
            while len(self.of_type(type_)) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.of_type(type_)[count - 1]

    async def hear(self, seconds: float) -> bytes:
        """The next ``seconds`` the answer track plays (it plays in real time, silence included)."""
        start = len(self.heard)
        end = start + 2 * int(seconds * RATE)
        while len(self.heard) < end:
            self._heard_more.clear()
            await self._heard_more.wait()
        return bytes(self.heard[start:end])

    async def close(self) -> None:
        await cancel_and_wait(self._recorder)
        await self.pc.close()

    def _message(self, data: str | bytes) -> None:
        self.events.append(json.loads(data))
        self._changed.set()

    def _track(self, track: Any) -> None:
        if track.kind == "audio" and self._recorder is None:
            self._recorder = asyncio.create_task(read_inbound(track, self._record, chunk_ms=20))

    def _record(self, pcm: bytes) -> None:
        self.arrivals.append((time.monotonic(), len(self.heard), len(self.heard) + len(pcm)))
        self.heard += pcm
        self._heard_more.set()


__all__ = ["CallRefused", "WebRtcCaller"]
