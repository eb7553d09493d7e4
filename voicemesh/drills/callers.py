"""Synthetic callers: real speech through the edge's Realtime endpoint, one record per turn.

Each caller is a stock ``openai`` realtime client (``voicemesh.realtime.connect``). It speaks an
utterance in real-time-paced 40 ms chunks, then keeps its microphone open with silence (as a real
client does) until the answer is complete, listens for a moment, and speaks the next utterance.
Server events are read raw (``recv_bytes``) so the edge's vendor events reach us untouched.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openai.resources.realtime.realtime import AsyncRealtimeConnection

from voicemesh.drills.records import Clock, TurnRecord, playback_end
from voicemesh.drills.speech import Utterance
from voicemesh.realtime import (
    CHUNK_MS,
    META_DEGRADED,
    META_DEGRADED_REASON,
    META_FAILED_OVER_FROM,
    META_REGION,
    VENDOR_PREFIX,
    chunk_bytes,
    connect,
    delta_seconds,
    pcm_chunks,
    send_audio,
    session_config,
    tick,
)

CHUNK_S = CHUNK_MS / 1000
_SILENCE = bytes(chunk_bytes(CHUNK_MS))

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
    admin_key: str = ""
    """For the edge's ``/status`` (admin scope); callers talk with ``api_key``."""

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
        turns_left = list(range(1, self.settings.turns + 1))
        session = session_config(
            instructions=self.settings.instructions,
            max_output_tokens=self.settings.max_output_tokens,
            silence_ms=self.settings.silence_ms,
        )
        try:
            # No SDK reconnect: a dropped session is what a drill must see and record.
            async with connect(self.edge.ws_base, self.edge.api_key, max_retries=0) as conn:
                self.state.sessions_open += 1
                await conn.session.update(session=session)  # type: ignore[arg-type]
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

    async def _speak(
        self, conn: AsyncRealtimeConnection, utt: Utterance, rec: TurnRecord, reader: asyncio.Task[None]
    ) -> None:
        """Real-time paced speech, then silence until the answer is done (or the turn times out)."""
        start = time.monotonic()
        chunks = pcm_chunks(utt.pcm, CHUNK_MS)
        for i, chunk in enumerate(chunks):
            await tick(start, i, CHUNK_S)
            await send_audio(conn, chunk)
        rec.speech_end = self.state.clock.now()
        deadline = time.monotonic() + self.settings.turn_timeout_s
        i = len(chunks)
        while not self._turn_done.is_set() and time.monotonic() < deadline and not reader.done():
            await tick(start, i, CHUNK_S)
            i += 1
            await send_audio(conn, _SILENCE)

    async def _silence(self, conn: AsyncRealtimeConnection, seconds: float) -> None:
        start = time.monotonic()
        for i in range(int(seconds / CHUNK_S)):
            await tick(start, i, CHUNK_S)
            await send_audio(conn, _SILENCE)

    async def _read(self, conn: AsyncRealtimeConnection) -> None:
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
            seconds = delta_seconds(str(event.get("delta", "")))
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
