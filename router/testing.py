"""A scripted stand-in region, for tests of the router itself.

It stands in for a region where a model is not what is under test (failover, deadlines, the
connection pool, failover records): a real WebSocket server on loopback that speaks the region turn
protocol (``wire.turn``; the router reaches it through ``wire.client`` as it would a real region) and
plays, for each turn, a script of steps. ``Crash`` closes the socket (a killed process), ``Hang``
stops sending (a stopped process). ``/health`` answers like a region's, or fails while ``healthy`` is
False. The region tests (``tests/region``) cover the real thing.

    async with ScriptedRegion("a", lambda start: [Admit(), Hear(), *speak("Hi there."), Done()]) as a:
        router = Router(settings, registry=Registry(regions=[a.record()]))
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import msgspec
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from router.registry import Location, RegionRecord
from wire.turn import (
    TURN_PATH,
    AudioClause,
    TextDelta,
    ToolCall,
    ToolCalls,
    Transcript,
    TurnAdmitted,
    TurnCancel,
    TurnDone,
    TurnError,
    TurnRejected,
    TurnStart,
    decode_client,
    encode,
)

_PCM_PER_CLAUSE = b"\x00\x01" * 240  # 10 ms of 24 kHz PCM16: content does not matter here


@dataclass(frozen=True)
class Admit:
    """``turn.admitted``."""


@dataclass(frozen=True)
class Hear:
    """``transcript``: the turn's own transcript or text, else ``text``."""

    text: str = "hello"


@dataclass(frozen=True)
class Say:
    """One ``text.delta``."""

    delta: str


@dataclass(frozen=True)
class Voice:
    """One ``audio.clause`` and its audio frame."""

    text: str


@dataclass(frozen=True)
class Call:
    """One ``tool_calls`` message: a call to ``name`` with ``arguments`` (JSON text)."""

    name: str
    arguments: str = "{}"


@dataclass(frozen=True)
class Done:
    """``turn.done`` (``completed`` or ``failed``)."""

    status: Literal["completed", "failed"] = "completed"


@dataclass(frozen=True)
class Reject:
    """``turn.rejected``: the region is full."""


@dataclass(frozen=True)
class Fail:
    """A turn ``error`` with ``code``."""

    code: str
    message: str = "scripted failure"


@dataclass(frozen=True)
class Crash:
    """Drop the connection without a word, as a killed process would."""


@dataclass(frozen=True)
class Hang:
    """Send nothing more (a stopped process) until ``until`` is set, if given."""

    until: asyncio.Event | None = None


Step = Admit | Hear | Say | Voice | Call | Done | Reject | Fail | Crash | Hang
Script = Callable[[TurnStart], Sequence[Step]]


def speak(*clauses: str) -> list[Step]:
    """The text, then the audio, of each clause, as a region streams them."""
    return [step for c in clauses for step in (Say(c + " "), Voice(c))]


def answer(*clauses: str) -> Script:
    """A healthy region's script: admit, transcribe, speak ``clauses``, done."""
    return lambda _start: [Admit(), Hear(), *speak(*clauses), Done()]


@dataclass
class ScriptedRegion:
    """A stand-in region on ``127.0.0.1`` (a free port); ``url`` once started."""

    id: str
    script: Script
    healthy: bool = True
    """While False, ``/health`` answers with something no region would (a failed probe)."""
    handshake_s: float = 0.0
    """How long a turn connection's handshake takes (a region on a loaded machine)."""
    starts: list[TurnStart] = field(default_factory=list, init=False)
    """Every ``turn.start`` received, as sent (failover fills ``transcript``/``heard_text``)."""
    cancels: list[str] = field(default_factory=list, init=False)
    hanging: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    """Set when a turn reaches a ``Hang`` step."""
    _server: Server | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def record(self, location: Location | None = None, residency: Sequence[str] = ()) -> RegionRecord:
        return RegionRecord(
            id=self.id,
            url=self.url,
            location=location or Location(0.0, 0.0),
            residency=list(residency),
            capacity=2,
        )

    async def __aenter__(self) -> ScriptedRegion:
        self._server = await serve(self._serve, "127.0.0.1", 0, process_request=self._http, compression=None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _http(self, conn: ServerConnection, request: Request) -> Response | None:
        if request.path == TURN_PATH and self.handshake_s:
            await asyncio.sleep(self.handshake_s)
        if request.path == "/health":
            if not self.healthy:
                return conn.respond(500, "stopped\n")
            resp = conn.respond(200, msgspec.json.encode({"status": "ready", "capacity": 2}).decode())
            resp.headers["Content-Type"] = "application/json"
            return resp
        return None if request.path == TURN_PATH else conn.respond(404, "not found\n")

    async def _serve(self, ws: ServerConnection) -> None:
        playing: asyncio.Task[None] | None = None
        current: TurnStart | None = None
        try:
            async for frame in ws:
                if isinstance(frame, bytes):
                    continue  # the turn's audio: the script decides what was "heard"
                msg = decode_client(frame)
                if isinstance(msg, TurnStart):
                    current = msg
                    self.starts.append(msg)
                    if msg.audio_bytes:
                        await ws.recv()
                    playing = asyncio.create_task(self._play(ws, msg))
                elif isinstance(msg, TurnCancel):
                    self.cancels.append(msg.turn_id)
                    if playing is not None and not playing.done() and current is not None:
                        playing.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await playing
                        await ws.send(
                            encode(TurnDone(turn_id=msg.turn_id, region=self.id, status="cancelled"))
                        )
        except ConnectionClosed:
            pass
        finally:
            if playing is not None:
                playing.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                    await playing

    async def _play(self, ws: ServerConnection, start: TurnStart) -> None:
        turn, index, text = start.turn_id, 0, ""
        for step in self.script(start):
            if isinstance(step, Admit):
                await ws.send(encode(TurnAdmitted(turn_id=turn, region=self.id)))
            elif isinstance(step, Hear):
                heard = start.transcript or start.text or step.text
                await ws.send(encode(Transcript(turn_id=turn, text=heard)))
            elif isinstance(step, Say):
                text += step.delta
                await ws.send(encode(TextDelta(turn_id=turn, delta=step.delta)))
            elif isinstance(step, Voice):
                clause = AudioClause(
                    turn_id=turn, index=index, text=step.text, audio_bytes=len(_PCM_PER_CLAUSE)
                )
                await ws.send(encode(clause))
                await ws.send(_PCM_PER_CLAUSE)
                index += 1
            elif isinstance(step, Call):
                call = ToolCall(id=f"{self.id}-call-{index}", name=step.name, arguments=step.arguments)
                await ws.send(encode(ToolCalls(turn_id=turn, calls=[call])))
            elif isinstance(step, Done):
                await ws.send(encode(TurnDone(turn_id=turn, region=self.id, status=step.status, text=text)))
            elif isinstance(step, Reject):
                await ws.send(encode(TurnRejected(turn_id=turn, region=self.id, retry_after_s=1.0)))
            elif isinstance(step, Fail):
                await ws.send(encode(TurnError(turn_id=turn, code=step.code, message=step.message)))
            elif isinstance(step, Crash):
                ws.transport.abort()
                return
            else:
                self.hanging.set()
                await (step.until or asyncio.Event()).wait()
