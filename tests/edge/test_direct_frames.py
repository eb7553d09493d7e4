"""Appends taken in the transport's callback (``edge/app/direct_ws.py``, ``edge/realtime/client_frames.py``),
through the edge's real server (uvicorn on loopback) and a real WebSocket client: they are heard in
the order the client sent them with the events around them, what the session refuses is answered
as before, and they count as activity for the idle timer.

Fast tier: the real app on stand-ins (``edge.testing``: energy VAD, scripted router); the models
are not what is under test.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from edge.app.server import EdgeTask
from edge.shared.metrics import DIRECT_FRAMES
from edge.shared.settings import EdgeSettings, LimitSettings
from edge.testing import memory_services, silence, tone
from tests.fixtures.common import free_port

KEY = "caller-key-0123"
_SERVER_VAD = {"type": "server_vad", "create_response": False, "silence_duration_ms": 300}


@asynccontextmanager
async def _session(
    limits: LimitSettings | None = None, *, detection: dict[str, Any] | None = _SERVER_VAD
) -> AsyncIterator[ClientConnection]:
    """A Realtime session on a real edge, its turns not answered (the events are what is tested)."""
    settings = EdgeSettings(api_keys=(KEY,), port=free_port(), limits=limits or LimitSettings())
    services = memory_services(settings=settings)
    edge = await EdgeTask.start(settings, services.router, services=services)
    try:
        async with connect(
            f"ws://127.0.0.1:{settings.port}/v1/realtime?model=x",
            additional_headers={"Authorization": f"Bearer {KEY}"},
        ) as ws:
            assert json.loads(await ws.recv())["type"] == "session.created"
            update = {"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
                "turn_detection": detection}}}}  # fmt: skip
            await ws.send(json.dumps(update))
            assert await _next(ws, "session.updated")
            yield ws
    finally:
        await edge.aclose()


async def _next(ws: ClientConnection, *types: str) -> dict[str, Any]:
    while True:
        event: dict[str, Any] = json.loads(await ws.recv())
        if event["type"] in types:
            return event


def _append(pcm: bytes, event_id: str | None = None) -> str:
    event = {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}
    return json.dumps(event if event_id is None else {**event, "event_id": event_id})


def _frames(pcm: bytes, ms: int = 40) -> list[str]:
    step = 2 * 24 * ms
    return [_append(pcm[i : i + step]) for i in range(0, len(pcm), step)]


def _direct() -> float:
    return DIRECT_FRAMES._value.get()


async def test_appends_past_the_asgi_queue_keep_their_order_with_the_events_after_them() -> None:
    """A whole turn's audio sent back to back, then a clear at once: the turn is called and
    committed before the clear is handled, as the client sent them, and the appends were taken in
    the transport's callback."""
    before = _direct()
    async with _session() as ws:
        for frame in _frames(tone(0.6) + silence(1.0)):
            await ws.send(frame)
        await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
        kinds = []
        while not kinds or kinds[-1] != "input_audio_buffer.cleared":
            kinds.append((await _next(ws, *_BUFFER_EVENTS))["type"])
        assert kinds == list(_BUFFER_EVENTS)
    assert _direct() > before  # (counted as the session closed)


_BUFFER_EVENTS = (
    "input_audio_buffer.speech_started",
    "input_audio_buffer.speech_stopped",
    "input_audio_buffer.committed",
    "input_audio_buffer.cleared",
)


async def test_an_append_the_session_refuses_is_answered_with_its_error() -> None:
    """Bad audio and appends over the rate are not taken in the callback: they go the ASGI way and
    get their ``error`` event, each counted once against the rate, and the session goes on."""
    limits = replace(LimitSettings(), events_per_s=0.01, events_burst=5)
    async with _session(limits, detection=None) as ws:  # (5 events: session.update spent one)
        await ws.send(_append(b"\x00\x01\x02", event_id="odd"))  # not PCM16: an odd byte count
        error = (await _next(ws, "error"))["error"]
        assert error["code"] == "invalid_audio" and error["event_id"] == "odd", error
        for _ in range(2):
            await ws.send(_append(silence(0.04)))
        # The fifth event: answered on its merits (the bad append was counted once, not twice).
        await ws.send(json.dumps({"type": "input_audio_buffer.commit"}))
        error = (await _next(ws, "error"))["error"]
        assert error["code"] == "input_audio_buffer_commit_empty" and "have 80" in error["message"], error
        await ws.send(_append(silence(0.04)))
        assert (await _next(ws, "error"))["error"]["code"] == "rate_limit_exceeded"


async def test_appends_alone_keep_a_session_alive_past_its_idle_limit() -> None:
    """Appends taken in the callback count as client events for the idle timer: 0.1 s apart for
    3 s they keep a 2 s idle limit from firing (a stall under 1.9 s is tolerated); then it fires."""
    before = _direct()
    async with _session(replace(LimitSettings(), idle_timeout_s=2.0)) as ws:
        for frame in _frames(silence(3.0), ms=100):
            await ws.send(frame)
            await asyncio.sleep(0.1)
        await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))  # (its answer: not closed yet)
        answer = await _next(ws, "input_audio_buffer.cleared", "error")
        assert answer["type"] == "input_audio_buffer.cleared", answer
        error = await _next(ws, "error")
        assert error["error"]["code"] == "session_idle_timeout", error
    assert _direct() > before  # (the appends went the direct way: what this test is about)


class _RawClient:
    """A WebSocket client over a plain TCP stream (websockets' sans-I/O protocol): what it sends is
    written in pieces of any size the test chooses, as a network may deliver them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proto = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/v1/realtime?model=x"))
        self.events: list[dict[str, Any]] = []
        self.pongs: list[bytes] = []
        self.closed: int | None = None
        self._changed = asyncio.Event()

    async def __aenter__(self) -> _RawClient:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        request = self.proto.connect()
        request.headers["Authorization"] = f"Bearer {KEY}"
        self.proto.send_request(request)
        self.writer.write(b"".join(self.proto.data_to_send()))
        self._reading = asyncio.create_task(self._read())
        await self.wait_for("session.created")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._reading.cancel()
        self.writer.close()

    async def _read(self) -> None:
        while data := await self.reader.read(65536):
            self.proto.receive_data(data)
            for ev in self.proto.events_received():
                if isinstance(ev, Frame) and ev.opcode is Opcode.TEXT:
                    self.events.append(json.loads(ev.data))
                elif isinstance(ev, Frame) and ev.opcode is Opcode.PONG:
                    self.pongs.append(bytes(ev.data))
                elif isinstance(ev, Frame) and ev.opcode is Opcode.CLOSE:
                    self.closed = self.proto.close_rcvd.code if self.proto.close_rcvd else 1005
                elif isinstance(ev, Response):
                    assert ev.status_code == 101, ev
            self.writer.write(b"".join(self.proto.data_to_send()))  # (the close handshake)
            self._changed.set()

    async def wait_for(self, kind: str) -> dict[str, Any]:
        async with asyncio.timeout(30):  # (a guard: a broken edge fails the test, not hangs it)
            while True:
                found = [e for e in self.events if e["type"] == kind]
                if found:
                    return found[0]
                self._changed.clear()
                await self._changed.wait()

    async def write_in_pieces(self, data: bytes, rng: random.Random) -> None:
        i = 0
        while i < len(data):
            k = rng.choice((1, 2, 3, 7, 64, 333, 1500, 4000))
            self.writer.write(data[i : i + k])
            await self.writer.drain()
            await asyncio.sleep(0.001)  # (the edge reads each piece on its own, or several together)
            i += k


async def test_frames_cut_anywhere_in_the_byte_stream_are_read_whole_and_in_order() -> None:
    """The edge cuts the byte stream into frames itself (``edge/app/direct_ws.py``): frames split at any
    byte, several in one read, a ping and a fragmented message among them, are each read whole and
    handled in the order sent: audio before a clear is cleared, audio after it committed whole,
    the ping answered."""
    settings = EdgeSettings(api_keys=(KEY,), port=free_port())
    services = memory_services(settings=settings)
    edge = await EdgeTask.start(settings, services.router, services=services)
    before = _direct()
    try:
        async with _RawClient(settings.port) as client:
            session_id = (await client.wait_for("session.created"))["session"]["id"]
            proto = client.proto
            off = {"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
                "turn_detection": None}}}}  # fmt: skip
            proto.send_text(json.dumps(off).encode())
            for frame in _frames(tone(0.12)):
                proto.send_text(frame.encode())
            proto.send_ping(b"p1")
            proto.send_text(b'{"type": "input_audio_buffer', fin=False)
            proto.send_continuation(b'.clear"}', fin=True)
            for frame in _frames(tone(0.08)):
                proto.send_text(frame.encode())
            proto.send_text(json.dumps({"type": "input_audio_buffer.clear"}).encode())
            for frame in _frames(tone(0.2)):
                proto.send_text(frame.encode())
            proto.send_text(json.dumps({"type": "input_audio_buffer.commit"}).encode())
            stream = b"".join(proto.data_to_send())
            await client.write_in_pieces(stream[: len(stream) // 2], random.Random(7))
            client.writer.write(stream[len(stream) // 2 :])  # (the rest at once: many frames a read)
            committed = await client.wait_for("input_audio_buffer.committed")
            kinds = [e["type"] for e in client.events if e["type"].startswith("input_audio_buffer.")]
            assert kinds == ["input_audio_buffer.cleared"] * 2 + ["input_audio_buffer.committed"], kinds
            assert client.pongs == [b"p1"]
            pending = services.sessions.live[session_id].conversation.pending_audio
            assert pending is not None and pending[0] == committed["item_id"]
            assert len(pending[1]) == 2 * 16_000 * 200 // 1000  # the 200 ms after the clear, at 16 kHz
    finally:
        await edge.aclose()
    assert _direct() > before


async def test_a_frame_over_the_size_limit_is_refused_without_being_buffered() -> None:
    """A header announcing a frame over the limit closes the connection 1009 at once: the edge does
    not wait for (and keep) megabytes it would refuse."""
    limits = replace(LimitSettings(), max_event_bytes=64 * 1024)
    settings = EdgeSettings(api_keys=(KEY,), port=free_port(), limits=limits)
    services = memory_services(settings=settings)
    edge = await EdgeTask.start(settings, services.router, services=services)
    try:
        async with _RawClient(settings.port) as client:
            size = 4 * limits.max_event_bytes + 1  # (the server's WebSocket message limit, plus one)
            header = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big") + b"mask"
            client.writer.write(header + b"x" * 1000)
            async with asyncio.timeout(30):
                while client.closed is None:
                    client._changed.clear()
                    await client._changed.wait()
            assert client.closed == 1009
    finally:
        await edge.aclose()


async def test_audio_sent_faster_than_real_time_is_all_heard() -> None:
    """Ten seconds of audio in one write (a file sent in a burst), with a 4 s buffer: appends are
    taken until the VAD is 2 s behind, then the client waits (``InputAudio.behind``), so every
    one of the five turns in it is heard; none is trimmed away unheard."""
    limits = replace(LimitSettings(), max_buffer_s=4.0)
    settings = EdgeSettings(api_keys=(KEY,), port=free_port(), limits=limits)
    services = memory_services(settings=settings)
    edge = await EdgeTask.start(settings, services.router, services=services)
    try:
        async with _RawClient(settings.port) as client:
            update = {"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
                "turn_detection": _SERVER_VAD}}}}  # fmt: skip
            client.proto.send_text(json.dumps(update).encode())
            await client.wait_for("session.updated")
            for frame in _frames((tone(1.0) + silence(1.0)) * 5, ms=500):
                client.proto.send_text(frame.encode())
            client.proto.send_text(json.dumps({"type": "input_audio_buffer.clear"}).encode())
            client.writer.write(b"".join(client.proto.data_to_send()))
            await client.wait_for("input_audio_buffer.cleared")
            starts = [
                e["audio_start_ms"] for e in client.events if e["type"] == "input_audio_buffer.speech_started"
            ]
            assert len(starts) == 5, starts
            assert len([e for e in client.events if e["type"] == "input_audio_buffer.committed"]) == 5
    finally:
        await edge.aclose()
