"""A phone call as Twilio places it on a bidirectional media stream (``<Connect><Stream>``): the
handshake signed with the account's auth token (``X-Twilio-Signature`` over the ``wss://`` URL),
``connected`` and ``start``, the caller's voice as 20 ms mu-law ``media`` messages in real time,
and ``stop``. What the edge sends back is collected: ``media`` (decoded), ``mark`` and ``clear``.

Twilio's playback is played too: audio is "played" in real time as it arrives, each ``mark`` is
echoed once the audio before it has been played, and ``clear`` drops what was not played and echoes
the marks still waiting, as Twilio does. Tests and benchmarks use it (``tests/edge/test_twilio*.py``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import numpy as np
from twilio.request_validator import RequestValidator
from websockets.asyncio.client import ClientConnection, connect

from edge.app.twilio import messages
from edge.app.twilio.media_stream import PATH
from voicemesh.realtime import tick
from wire.audio import G711_RATE, FloatAudio, float_to_g711, g711_to_float, resample

FRAME_S = 0.02


def to_mulaw(samples: FloatAudio, rate: int) -> bytes:
    """Float audio at ``rate`` as Twilio streams it: 8 kHz mu-law."""
    return float_to_g711(resample(samples, rate, G711_RATE) if rate != G711_RATE else samples, "ulaw")


def sign(auth_token: str, url: str, params: dict[str, str] | None = None) -> str:
    """``X-Twilio-Signature`` of a request to ``url`` (with a webhook's form ``params``)."""
    return str(RequestValidator(auth_token).compute_signature(url, params or {}))


@dataclass
class Received:
    """What the edge sent on the stream, as it came."""

    media: list[tuple[float, bytes]] = field(default_factory=list)
    """``(monotonic time, mu-law)`` of each ``media`` message."""
    marks: list[tuple[float, str]] = field(default_factory=list)
    clears: list[float] = field(default_factory=list)
    echoed: list[str] = field(default_factory=list)
    """Marks echoed back (played, or dropped by a ``clear``)."""
    dropped: list[str] = field(default_factory=list)
    """Marks echoed because a ``clear`` dropped the audio before them (Twilio echoes them all the same)."""
    stream_sids: set[str] = field(default_factory=set)
    other: list[dict[str, object]] = field(default_factory=list)
    """Anything else: Twilio would refuse it (error 31924)."""

    def audio(self, since: float = 0.0) -> bytes:
        return b"".join(chunk for t, chunk in self.media if t >= since)

    def audio_float(self, since: float = 0.0) -> FloatAudio:
        return g711_to_float(self.audio(since), "ulaw")


class TwilioCall:
    """One call's stream; use ``place_call``."""

    def __init__(self, ws: ClientConnection, stream_sid: str, call_sid: str, account_sid: str) -> None:
        self.ws = ws
        self.stream_sid, self.call_sid, self.account_sid = stream_sid, call_sid, account_sid
        self.received = Received()
        self.changed = asyncio.Event()
        self._seq = 0
        self._chunk = 0
        self._t0 = time.monotonic()
        self._play_until = 0.0
        self._marks: deque[tuple[float, str]] = deque()

    def seq(self) -> int:
        self._seq += 1
        return self._seq

    async def begin(self, parameters: dict[str, str]) -> None:
        await self.ws.send(messages.connected())
        start = messages.start(self.stream_sid, self.call_sid, self.account_sid, parameters, self.seq())
        await self.ws.send(start)

    async def send_mulaw(self, mulaw: bytes, *, pace: float = 1.0) -> None:
        """``mulaw`` as 20 ms ``media`` messages at ``pace`` x real time (0: as fast as possible)."""
        start = time.monotonic()
        step = messages.FRAME_BYTES
        for i, off in enumerate(range(0, len(mulaw), step)):
            self._chunk += 1
            payload = base64.b64encode(mulaw[off : off + step]).decode()
            stamp = int((time.monotonic() - self._t0) * 1000)
            await self.ws.send(messages.inbound_media(
                self.stream_sid, payload, seq=self.seq(), chunk=self._chunk, timestamp_ms=stamp))  # fmt: skip
            if pace > 0:
                await tick(start, i + 1, FRAME_S / pace)

    async def send_silence(self, seconds: float, *, pace: float = 1.0) -> None:
        await self.send_mulaw(messages.SILENCE * int(seconds * G711_RATE), pace=pace)

    async def send_silence_until(self, done: object, timeout_s: float = 120.0) -> None:
        """Silence in real time until ``done()``: a phone line streams all the time, quiet or not."""
        assert callable(done)
        async with asyncio.timeout(timeout_s):
            while not done():
                await self.send_mulaw(messages.SILENCE * messages.FRAME_BYTES * 5)

    async def stop(self) -> None:
        await self.ws.send(messages.stop(self.stream_sid, self.call_sid, self.account_sid, self.seq()))

    async def wait_until(self, done: object, timeout_s: float = 10.0) -> None:
        """Wait until ``done()`` is true (``timeout_s`` only stops a broken run from hanging)."""
        assert callable(done)
        async with asyncio.timeout(timeout_s):
            while not done():
                self.changed.clear()
                with contextlib.suppress(TimeoutError):  # (``done`` may look at the edge, not the stream)
                    await asyncio.wait_for(self.changed.wait(), 0.05)

    async def read(self) -> None:
        """The edge's messages, until it closes the stream."""
        async for raw in self.ws:
            now = time.monotonic()
            data = json.loads(raw)
            self.received.stream_sids.add(str(data.get("streamSid")))
            event = data.get("event")
            if event == "media":
                self.received.media.append((now, base64.b64decode(data["media"]["payload"])))
                self._play_until = max(now, self._play_until) + FRAME_S
            elif event == "mark":
                self.received.marks.append((now, data["mark"]["name"]))
                self._marks.append((max(now, self._play_until), data["mark"]["name"]))
            elif event == "clear":
                self.received.clears.append(now)
                self._play_until = now
                while self._marks:  # Twilio echoes the marks a clear dropped
                    name = self._marks.popleft()[1]
                    self.received.dropped.append(name)
                    await self._echo(name)
            else:
                self.received.other.append(data)
            self.changed.set()

    async def play(self) -> None:
        """Twilio's playback: each mark echoed once the audio before it would have been played."""
        while True:
            await asyncio.sleep(FRAME_S)
            while self._marks and self._marks[0][0] <= time.monotonic():
                await self._echo(self._marks.popleft()[1])

    async def _echo(self, name: str) -> None:
        self.received.echoed.append(name)
        self.changed.set()
        with contextlib.suppress(Exception):
            await self.ws.send(messages.played_mark(self.stream_sid, name, self.seq()))


@contextlib.asynccontextmanager
async def place_call(
    edge_url: str, auth_token: str, *, parameters: dict[str, str] | None = None,
    signature: str | None = None, public_url: str | None = None,
) -> AsyncIterator[TwilioCall]:  # fmt: skip
    """A call on the edge at ``edge_url`` (``ws://host:port``). The handshake is signed over
    ``public_url`` (default: the same host as ``wss://``), unless ``signature`` is given ("" sends none)."""
    host = edge_url.split("://", 1)[1].rstrip("/")
    signed_url = (public_url or f"wss://{host}") + PATH
    sig = sign(auth_token, signed_url) if signature is None else signature
    headers = {"X-Twilio-Signature": sig} if sig else {}
    async with connect(f"ws://{host}{PATH}", additional_headers=headers, max_size=None) as ws:
        sids = ("MZ", "CA", "AC")  # stream, call, account
        call = TwilioCall(ws, *(prefix + secrets.token_hex(16) for prefix in sids))
        reader = asyncio.create_task(call.read())
        player = asyncio.create_task(call.play())
        try:
            await call.begin(parameters or {})
            yield call
        finally:
            player.cancel()
            with contextlib.suppress(Exception):
                await ws.close()
            for task in (reader, player):
                with contextlib.suppress(BaseException):
                    await task


def energy(mulaw: bytes) -> float:
    """RMS of mu-law audio (0..1)."""
    x = g711_to_float(mulaw, "ulaw")
    return float(np.sqrt(np.mean(x**2))) if len(x) else 0.0


__all__ = ["Received", "TwilioCall", "energy", "place_call", "sign", "to_mulaw"]
