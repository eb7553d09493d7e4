"""Synthetic callers: real speech through the edge's Realtime endpoint, one record per turn.

Each caller is a stock ``openai`` realtime client (``AsyncOpenAI(...).realtime.connect``). It speaks an
utterance in real-time-paced 40 ms chunks, then keeps its microphone open with silence (as a real
client does) until the answer is complete, listens for a moment, and speaks the next utterance.
Server events are read raw (``recv_bytes``) so the edge's vendor events reach us untouched.

Times are seconds since the drill's start (``Clock``), so turns, faults and failovers share one axis.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from openai import AsyncOpenAI

from infra.drills.speech import Utterance
from wire.audio import CLIENT_RATE

CHUNK_S = 0.040
_CHUNK_BYTES = int(CLIENT_RATE * CHUNK_S) * 2
_SILENCE = base64.b64encode(bytes(_CHUNK_BYTES)).decode()
# How the edge marks a response (edge/response.py): ``response.metadata`` keys, and vendor events.
META_REGION = "voicemesh_region"
META_FAILED_OVER_FROM = "voicemesh_failed_over_from"
META_DEGRADED = "voicemesh_degraded"
META_DEGRADED_REASON = "voicemesh_degraded_reason"
VENDOR_PREFIX = "voicemesh."


class Clock:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.t0 = time.monotonic()
        self.wall0 = time.time()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def from_wall(self, wall: float) -> float:
        """A wall-clock time (e.g. from the edge's /status) on the drill's axis."""
        return wall - self.wall0


@dataclass
class TurnRecord:
    caller: int
    turn: int
    """1-based within its caller."""
    session_id: str
    text: str
    voice: str
    speech_start: float
    speech_end: float = 0.0
    first_audio: float | None = None
    done: float | None = None
    regions: list[str] = field(default_factory=list)
    """Every region that served part of the turn, in order."""
    failovers: list[dict[str, Any]] = field(default_factory=list)
    degraded: bool = False
    degraded_reason: str = ""
    queued_position: int | None = None
    status: str = "in_progress"
    """``response.done`` status, or ``timeout`` / ``disconnected`` / ``not_started``."""
    audio_s: float = 0.0
    max_gap_s: float = 0.0
    """Longest silence a real-time player would have played mid-answer (its buffer ran dry)."""
    max_delta_gap_s: float = 0.0
    transcript: str = ""
    reply: str = ""
    error: str | None = None
    arrivals: list[tuple[float, float]] = field(default_factory=list, repr=False)
    """(arrival time, audio seconds) per output_audio.delta."""

    @property
    def region(self) -> str:
        return self.regions[-1] if self.regions else ""

    @property
    def failed_over(self) -> bool:
        return bool(self.failovers)

    @property
    def ttfa_s(self) -> float | None:
        return None if self.first_audio is None else self.first_audio - self.speech_end

    @property
    def complete(self) -> bool:
        """The caller heard a whole answer: completed, not cancelled, with audio."""
        return self.status == "completed" and self.audio_s > 0

    @property
    def lost(self) -> bool:
        return not self.complete

    def add_audio(self, at: float, seconds: float) -> None:
        if self.arrivals:
            self.max_delta_gap_s = max(self.max_delta_gap_s, at - self.arrivals[-1][0])
        self.arrivals.append((at, seconds))
        self.audio_s += seconds
        self.max_gap_s = audible_gap(self.arrivals)

    def add_region(self, region: str) -> None:
        if region and (not self.regions or self.regions[-1] != region):
            self.regions.append(region)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["arrivals"] = [[round(at, 3), round(seconds, 4)] for at, seconds in self.arrivals]
        data.update(
            region=self.region, failed_over=self.failed_over, ttfa_s=self.ttfa_s, complete=self.complete
        )
        return data


def record_from_json(data: dict[str, Any]) -> TurnRecord:
    """The inverse of ``TurnRecord.to_json`` (derived fields are recomputed, not read)."""
    names = {f.name for f in fields(TurnRecord)}
    rec = TurnRecord(**{k: v for k, v in data.items() if k in names and k != "arrivals"})
    rec.arrivals = [(float(at), float(seconds)) for at, seconds in data.get("arrivals", [])]
    return rec


def silences(arrivals: Sequence[tuple[float, float]]) -> tuple[list[tuple[float, float]], float]:
    """A player that starts at the first chunk and plays in real time: the (start, end) of every
    silence it plays mid-answer because audio came late, and when it finishes playing."""
    if not arrivals:
        return [], 0.0
    play_until = arrivals[0][0] + arrivals[0][1]
    gaps: list[tuple[float, float]] = []
    for at, seconds in arrivals[1:]:
        if at > play_until:
            gaps.append((play_until, at))
            play_until = at
        play_until += seconds
    return gaps, play_until


def audible_gap(arrivals: Sequence[tuple[float, float]]) -> float:
    """Longest silence a real-time player would play mid-answer because audio came late."""
    return max((end - start for start, end in silences(arrivals)[0]), default=0.0)


def playback_end(arrivals: Sequence[tuple[float, float]]) -> float:
    """When a real-time player would finish playing the answer (drill time)."""
    return silences(arrivals)[1]


Predicate = Callable[[str, TurnRecord], bool]


class Moments:
    """Turn moments (``first_text``, ``first_audio``, ``done``) that scenarios wait on to time their
    faults."""

    def __init__(self) -> None:
        self._waiters: list[tuple[Predicate, asyncio.Future[TurnRecord]]] = []
        self.listeners: list[Callable[[str, TurnRecord], None]] = []

    def emit(self, kind: str, record: TurnRecord) -> None:
        for listener in self.listeners:
            listener(kind, record)
        for pred, fut in list(self._waiters):
            if not fut.done() and pred(kind, record):
                fut.set_result(record)

    async def wait(self, kind: str, *, turn: int | None = None, timeout_s: float | None = None) -> TurnRecord:
        fut: asyncio.Future[TurnRecord] = asyncio.get_running_loop().create_future()
        pred: Predicate = lambda k, r: k == kind and (turn is None or r.turn == turn)  # noqa: E731
        self._waiters.append((pred, fut))
        try:
            return await asyncio.wait_for(fut, timeout_s)
        finally:
            self._waiters.remove((pred, fut))


@dataclass(frozen=True)
class EdgeTarget:
    url: str
    """``http://host:port`` of the edge."""
    api_key: str

    @property
    def ws_base(self) -> str:
        return "ws" + self.url.rstrip("/").removeprefix("http") + "/v1"


@dataclass(frozen=True)
class CallerSettings:
    turns: int = 3
    turn_timeout_s: float = 90.0
    listen_cap_s: float = 1.5
    """After an answer, listen at most this long (a real caller would hear the whole answer)."""
    silence_ms: int = 500
    instructions: str = "You are a voice assistant. Answer in one short sentence."
    max_output_tokens: int = 48


@dataclass
class CallerState:
    """What every caller shares with the drill: the clock, the moments, and all turn records."""

    clock: Clock = field(default_factory=Clock)
    moments: Moments = field(default_factory=Moments)
    records: list[TurnRecord] = field(default_factory=list)
    sessions_open: int = 0

    def in_flight(self) -> list[TurnRecord]:
        return [r for r in self.records if r.done is None and r.status == "in_progress"]


class Caller:
    def __init__(
        self,
        index: int,
        edge: EdgeTarget,
        utterances: Sequence[Utterance],
        settings: CallerSettings,
        state: CallerState,
    ) -> None:
        self.index = index
        self.edge = edge
        self.utterances = utterances
        self.settings = settings
        self.state = state
        self._current: TurnRecord | None = None
        self._turn_done = asyncio.Event()
        self._session_id = ""
        self._session_known = asyncio.Event()

    async def run(self) -> None:
        clock = self.state.clock
        client = AsyncOpenAI(api_key=self.edge.api_key, websocket_base_url=self.edge.ws_base, max_retries=0)
        turns_left = list(range(1, self.settings.turns + 1))
        try:
            async with client.realtime.connect(model="voicemesh", max_retries=0) as conn:
                self.state.sessions_open += 1
                await conn.session.update(
                    session={
                        "type": "realtime",
                        "instructions": self.settings.instructions,
                        "max_output_tokens": self.settings.max_output_tokens,
                        "audio": {
                            "input": {
                                "turn_detection": {
                                    "type": "server_vad",
                                    "silence_duration_ms": self.settings.silence_ms,
                                }
                            }
                        },
                    }
                )
                reader = asyncio.create_task(self._read(conn))
                try:
                    # Turns carry the session id (to match the router's failover log): wait for it.
                    await asyncio.wait_for(self._session_known.wait(), 15.0)
                    for turn in list(turns_left):
                        utt = self.utterances[(self.index + turn - 1) % len(self.utterances)]
                        rec = TurnRecord(
                            self.index, turn, self._session_id, utt.text, utt.voice, speech_start=clock.now()
                        )
                        self.state.records.append(rec)
                        turns_left.remove(turn)
                        self._current, self._turn_done = rec, asyncio.Event()
                        await self._speak(conn, utt, rec, reader)
                        if rec.status == "in_progress":
                            self._unfinished(rec, reader)
                        if reader.done():
                            break
                        listen = playback_end(rec.arrivals) - clock.now()
                        await self._silence(conn, min(max(listen, 0.0), self.settings.listen_cap_s) + 0.3)
                finally:
                    reader.cancel()
                    self.state.sessions_open -= 1
        except Exception as exc:  # a dropped session is a result to record, not a crash of the drill
            current = self._current
            if current is not None and current.done is None:
                rec = current
                rec.status, rec.error, rec.done = "disconnected", f"{type(exc).__name__}: {exc}", clock.now()
                self.state.moments.emit("done", rec)
        for turn in turns_left:
            utt = self.utterances[(self.index + turn - 1) % len(self.utterances)]
            rec = TurnRecord(
                self.index,
                turn,
                self._session_id,
                utt.text,
                utt.voice,
                speech_start=clock.now(),
                status="not_started",
            )
            rec.error = "the session ended before this turn"
            self.state.records.append(rec)

    def _unfinished(self, rec: TurnRecord, reader: asyncio.Task[None]) -> None:
        if reader.done():
            exc = None if reader.cancelled() else reader.exception()
            rec.status, rec.error = "disconnected", f"the edge closed the session: {exc!r}"
        else:
            rec.status, rec.error = "timeout", f"no response.done within {self.settings.turn_timeout_s:.0f} s"
        rec.done = self.state.clock.now()
        self.state.moments.emit("done", rec)

    async def _speak(self, conn: Any, utt: Utterance, rec: TurnRecord, reader: asyncio.Task[None]) -> None:
        """Real-time paced speech, then silence until the answer is done (or the turn times out)."""
        start = time.monotonic()
        chunks = [utt.pcm[i : i + _CHUNK_BYTES] for i in range(0, len(utt.pcm), _CHUNK_BYTES)]
        for i, chunk in enumerate(chunks):
            await asyncio.sleep(max(0.0, start + i * CHUNK_S - time.monotonic()))
            await _append(conn, base64.b64encode(chunk).decode())
        rec.speech_end = self.state.clock.now()
        deadline = time.monotonic() + self.settings.turn_timeout_s
        tick = start + len(chunks) * CHUNK_S
        while not self._turn_done.is_set() and time.monotonic() < deadline and not reader.done():
            await asyncio.sleep(max(0.0, tick - time.monotonic()))
            tick += CHUNK_S
            await _append(conn, _SILENCE)

    async def _silence(self, conn: Any, seconds: float) -> None:
        start = time.monotonic()
        for i in range(int(seconds / CHUNK_S)):
            await asyncio.sleep(max(0.0, start + i * CHUNK_S - time.monotonic()))
            await _append(conn, _SILENCE)

    async def _read(self, conn: Any) -> None:
        while True:
            event = json.loads(await conn.recv_bytes())
            if event.get("type") == "session.created":
                self._session_id = str((event.get("session") or {}).get("id", ""))
                self._session_known.set()
            rec = self._current
            if rec is not None and rec.done is None:
                self._on_event(event, rec)

    def _on_event(self, event: dict[str, Any], rec: TurnRecord) -> None:
        now = self.state.clock.now()
        kind = str(event.get("type", ""))
        if kind == "response.output_audio.delta":
            seconds = len(base64.b64decode(event.get("delta", ""))) / 2 / CLIENT_RATE
            if rec.first_audio is None and rec.speech_end:
                rec.first_audio = now
                self.state.moments.emit("first_audio", rec)
            rec.add_audio(now, seconds)
        elif kind == "response.output_audio_transcript.delta":
            if not rec.reply and rec.speech_end:
                self.state.moments.emit("first_text", rec)
            rec.reply += str(event.get("delta", ""))
        elif kind == "conversation.item.input_audio_transcription.completed":
            rec.transcript = str(event.get("transcript", ""))
        elif kind == "response.done":
            self._on_done(event.get("response") or {}, rec, now)
        elif kind == "error":
            err = event.get("error") or {}
            rec.error = f"{err.get('code') or err.get('type')}: {err.get('message')}"
        elif kind.startswith(VENDOR_PREFIX):
            self._on_vendor(kind, event, rec, now)

    def _on_done(self, response: dict[str, Any], rec: TurnRecord, now: float) -> None:
        status = str(response.get("status", ""))
        if not rec.speech_end and status == "cancelled":
            return  # VAD cut the utterance early and our own speech barged in: not this turn's answer
        meta = response.get("metadata") or {}
        moved_from = str(meta.get(META_FAILED_OVER_FROM, ""))
        region = str(meta.get(META_REGION, ""))
        if moved_from and not rec.failovers:
            # The failover events carry the time; the metadata (last failover only) is the fallback.
            rec.add_region(moved_from)
            rec.failovers.append({"at": None, "from": moved_from, "to": region or "edge", "reason": ""})
        rec.add_region(region)
        if str(meta.get(META_DEGRADED, "")).lower() == "true":
            rec.degraded = True
            rec.degraded_reason = str(meta.get(META_DEGRADED_REASON, ""))
        rec.status, rec.done = status or "unknown", now
        self._turn_done.set()
        self.state.moments.emit("done", rec)

    def _on_vendor(self, kind: str, event: dict[str, Any], rec: TurnRecord, now: float) -> None:
        name = kind.removeprefix(VENDOR_PREFIX)
        if name == "turn.routed":
            rec.add_region(str(event.get("region", "")))
        elif name == "turn.failed_over":
            rec.failovers.append(
                {
                    "at": now,
                    "from": event.get("from_region", ""),
                    "to": event.get("to_region", ""),
                    "reason": event.get("reason", ""),
                }
            )
            rec.add_region(str(event.get("to_region", "")))
        elif name == "degraded":
            rec.degraded = True
        elif name == "turn.queued":
            position = int(event.get("position", 0))
            rec.queued_position = max(position, rec.queued_position or 0)


async def _append(conn: Any, audio_b64: str) -> None:
    # The same event the SDK's typed ``input_audio_buffer.append`` sends, pre-serialised: a 40 ms
    # chunk per caller 25 times a second would otherwise cost a pydantic round trip each.
    await conn.send_raw(json.dumps({"type": "input_audio_buffer.append", "audio": audio_b64}))


async def run_callers(
    edge: EdgeTarget,
    utterances: Sequence[Utterance],
    count: int,
    settings: CallerSettings,
    state: CallerState,
    *,
    stagger_s: float = 0.7,
) -> list[TurnRecord]:
    """``count`` callers at once (starts staggered so their turns do not all align)."""

    async def one(i: int) -> None:
        await asyncio.sleep(i * stagger_s)
        await Caller(i, edge, utterances, settings, state).run()

    await asyncio.gather(*(one(i) for i in range(count)))
    return state.records
