"""A client for the region turn protocol: one warm connection, one turn at a time.

The router builds its pools and failover on this; benchmarks and tests use it to talk to a region
directly.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import msgspec
import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from wire.errors import BadEvent, RegionBusy, RegionDisconnected, RegionUnavailable
from wire.region_auth import ClientAuth
from wire.region_keys import KeySetError
from wire.turn import (
    TURN_PATH,
    AudioClause,
    RegionMessage,
    TextDelta,
    Transcript,
    TurnCancel,
    TurnDone,
    TurnError,
    TurnQueued,
    TurnRejected,
    TurnStart,
    decode_region,
    encode,
)


@dataclass(frozen=True, slots=True)
class ClauseAudio:
    """An ``audio.clause`` announcement joined with the PCM16 frame that followed it."""

    clause: AudioClause
    pcm: bytes


RegionEvent = RegionMessage | ClauseAudio


def turns_url(base_url: str) -> str:
    """``http://host:port`` (a region's public URL) -> ``ws://host:port/v1/turns``."""
    base = base_url.rstrip("/")
    if base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    elif base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    return base if base.endswith(TURN_PATH) else base + TURN_PATH


class RegionConnection:
    """One WebSocket to a region. Not safe for two turns at once: pools hand it to one turn."""

    def __init__(self, ws: ClientConnection, *, region: str = "") -> None:
        self._ws = ws
        self.region = region
        self.turns_served = 0

    @classmethod
    async def open(
        cls, url: str, *, region: str = "", open_timeout: float = 5.0, auth: ClientAuth | None = None
    ) -> RegionConnection:
        """Connect with a fresh region token (``auth``, default ``ClientAuth.from_env()``).

        The region checks the token at this handshake only: the connection may then stay warm in a
        pool for longer than the token lives, and each new connection presents a new token.
        A refusal (HTTP 401) raises ``RegionUnavailable`` with the region's reason.
        """
        target = turns_url(url)
        try:
            auth = auth if auth is not None else ClientAuth.from_env()
            headers = auth.headers()
        except KeySetError as exc:
            raise RegionUnavailable(
                f"no credential for region {region or url}: {exc.message}", region=region
            ) from exc
        try:
            ws = await connect(
                target, open_timeout=open_timeout, max_size=2**24, compression=None,
                additional_headers=headers, ssl=auth.ssl if target.startswith("wss://") else None,
            )  # fmt: skip
        except InvalidStatus as exc:
            reason = exc.response.body.decode(errors="replace")[:300] if exc.response.body else ""
            raise RegionUnavailable(
                f"region {region or url} refused the connection (HTTP {exc.response.status_code}): {reason}",
                region=region,
            ) from exc
        except (OSError, TimeoutError, websockets.WebSocketException) as exc:
            raise RegionUnavailable(
                f"cannot connect to region {region or url}: {exc}", region=region
            ) from exc
        return cls(ws, region=region)

    @property
    def is_open(self) -> bool:
        return self._ws.state is websockets.State.OPEN

    async def start(self, start: TurnStart, audio: bytes | None = None) -> None:
        if audio:
            start = msgspec.structs.replace(start, audio_bytes=len(audio))
        try:
            await self._ws.send(encode(start))
            if audio:
                await self._ws.send(audio)
        except (OSError, websockets.WebSocketException) as exc:
            raise RegionDisconnected(
                f"region {self.region} dropped the turn: {exc}", region=self.region
            ) from exc

    async def cancel(self, turn_id: str) -> None:
        try:
            await self._ws.send(encode(TurnCancel(turn_id=turn_id)))
        except (OSError, websockets.WebSocketException):
            pass  # a dead connection has nothing left to cancel

    async def events(self) -> AsyncIterator[RegionEvent]:
        """Yield the current turn's events until ``turn.done``, ``turn.rejected`` or a turn error."""
        pending: AudioClause | None = None
        while True:
            try:
                frame = await self._ws.recv()
            except (OSError, websockets.WebSocketException) as exc:
                raise RegionDisconnected(
                    f"region {self.region} connection dropped mid-turn: {exc}", region=self.region
                ) from exc
            if isinstance(frame, bytes):
                if pending is None:
                    raise BadEvent(f"region {self.region} sent audio without an audio.clause header")
                yield ClauseAudio(pending, frame)
                pending = None
                continue
            msg = decode_region(frame)
            if isinstance(msg, AudioClause):
                pending = msg
                continue
            yield msg
            if isinstance(msg, TurnDone | TurnRejected) or (isinstance(msg, TurnError) and msg.turn_id):
                self.turns_served += 1
                return

    async def close(self) -> None:
        await self._ws.close()


@dataclass
class TurnResult:
    """Everything one turn produced, as a caller saw it."""

    transcript: str = ""
    text: str = ""
    audio: bytearray = field(default_factory=bytearray)
    clauses: list[str] = field(default_factory=list)
    region: str = ""
    status: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    queued: list[TurnQueued] = field(default_factory=list)
    first_audio_s: float | None = None
    error: TurnError | None = None


async def run_turn(
    url: str,
    start: TurnStart,
    audio: bytes | None = None,
    *,
    region: str = "",
    auth: ClientAuth | None = None,
) -> TurnResult:
    """Open a connection, run one turn to the end, and collect what came back."""
    conn = await RegionConnection.open(url, region=region, auth=auth)
    try:
        return await collect_turn(conn, start, audio)
    finally:
        await conn.close()


async def collect_turn(conn: RegionConnection, start: TurnStart, audio: bytes | None = None) -> TurnResult:
    result = TurnResult(region=conn.region)
    t0 = time.perf_counter()
    await conn.start(start, audio)
    async for ev in conn.events():
        if isinstance(ev, ClauseAudio):
            if result.first_audio_s is None:
                result.first_audio_s = time.perf_counter() - t0
            result.audio += ev.pcm
            result.clauses.append(ev.clause.text)
        elif isinstance(ev, Transcript):
            result.transcript = ev.text
        elif isinstance(ev, TextDelta):
            result.text += ev.delta
        elif isinstance(ev, TurnQueued):
            result.queued.append(ev)
        elif isinstance(ev, TurnDone):
            result.status, result.timings, result.region = ev.status, ev.timings, ev.region
        elif isinstance(ev, TurnRejected):
            raise RegionBusy(ev.message or "region busy", region=ev.region, retry_after_s=ev.retry_after_s)
        elif isinstance(ev, TurnError):
            result.error = ev
            result.status = "error"
    return result
