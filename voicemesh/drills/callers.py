"""Synthetic callers: real speech through the edge's Realtime endpoint, one record per turn.

Each caller is a stock ``openai`` realtime client (``voicemesh.realtime.connect``). It speaks an
utterance in real-time-paced 40 ms chunks, then keeps its microphone open with silence (as a real
client does) until the answer is complete, listens for a moment, and speaks the next utterance.
Server events are read raw (``recv_bytes``) so the edge's vendor events reach us untouched.

The last ``tool_callers`` callers call a function every turn (``voicemesh/drills/tool_calls.py``).
With ``resume`` (the edge drills), a caller lets the SDK reconnect and resume its session instead of
recording the drop (``voicemesh/drills/resume_check.py``). What callers share with the drill (the
clock, the moments, the records) is ``voicemesh/drills/caller_state.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from openai.resources.realtime.realtime import AsyncRealtimeConnection

from voicemesh.drills.caller_state import CallerSettings, CallerState, EdgeTarget
from voicemesh.drills.records import TurnRecord, playback_end
from voicemesh.drills.resume_check import ResumeCheck
from voicemesh.drills.speech import Utterance
from voicemesh.drills.tool_calls import TOOL_CALL_TOKENS, WEATHER_OUTPUT, WEATHER_TOOL
from voicemesh.drills.turn_route import note_route, note_vendor
from voicemesh.realtime import (
    CHUNK_MS,
    VENDOR_PREFIX,
    Resuming,
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


class Caller:
    def __init__(
        self,
        index: int,
        edge: EdgeTarget,
        utterances: Sequence[Utterance],
        settings: CallerSettings,
        state: CallerState,
        *,
        tools: bool = False,
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
        self.tools = tools
        self._answer: list[str] = []
        """Call ids whose output goes back before the turn's spoken answer is asked for."""
        self._resume = Resuming() if settings.resume else None
        self._resume_check = ResumeCheck(state)

    async def run(self) -> None:
        clock = self.state.clock
        turns_left = list(range(1, self.settings.turns + 1))
        session = session_config(
            instructions=self.settings.instructions,
            max_output_tokens=self.settings.max_output_tokens,
            silence_ms=self.settings.silence_ms,
        )
        if self.tools:
            self.state.tool_callers.add(self.index)
            session["tools"] = [WEATHER_TOOL]
            session["tool_choice"] = {"type": "function", "name": "get_weather"}
            session["instructions"] += " Whatever the question, call get_weather with one real city name."
            # Room for the call's JSON (a small model's arguments can run long); the spoken answer
            # after it keeps the callers' budget (its response.create says so).
            session["max_output_tokens"] = max(self.settings.max_output_tokens, TOOL_CALL_TOKENS)
        try:
            # No SDK reconnect: a dropped session is what a drill must see and record; unless the
            # caller resumes (edge drills): then the SDK reconnects and the session goes on.
            retries = 8 if self._resume is not None else 0
            async with connect(
                self.edge.ws_base, self.edge.api_key, max_retries=retries, resume=self._resume
            ) as conn:
                self.state.sessions_open += 1
                await conn.session.update(session=session)  # type: ignore[arg-type]
                reader = asyncio.create_task(self._read(conn))
                try:
                    # Turns carry the session id (to match the router's failover log): wait for it.
                    await asyncio.wait_for(self._session_known.wait(), 15.0)
                    for turn in list(turns_left):
                        if self.state.stopping:
                            turns_left.clear()
                            break
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
                        if rec.status == "barged_in":
                            continue  # the next utterance at once: speech over the answer
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
            await send_audio(conn, chunk, resuming=self._resume is not None)
        rec.speech_end = self.state.clock.now()
        deadline = time.monotonic() + self.settings.turn_timeout_s
        i = len(chunks)
        every = self.settings.barge_in_every
        barge = not self.tools and every > 0 and rec.turn % every == 0
        while not self._turn_done.is_set() and time.monotonic() < deadline and not reader.done():
            if barge and rec.first_audio is not None:
                # The caller heard the answer start and talks over it: the edge cancels the answer.
                rec.status, rec.done = "barged_in", self.state.clock.now()
                self.state.moments.emit("done", rec)
                return
            await tick(start, i, CHUNK_S)
            i += 1
            await send_audio(conn, _SILENCE, resuming=self._resume is not None)

    async def _silence(self, conn: AsyncRealtimeConnection, seconds: float) -> None:
        start = time.monotonic()
        for i in range(int(seconds / CHUNK_S)):
            await tick(start, i, CHUNK_S)
            await send_audio(conn, _SILENCE, resuming=self._resume is not None)

    async def _events(self, conn: AsyncRealtimeConnection) -> AsyncIterator[dict[str, Any]]:
        if self._resume is None:
            while True:  # raw: the edge's vendor events reach us untouched
                yield json.loads(await conn.recv_bytes())
        async for parsed in conn:  # the SDK's iterator: it reconnects (and resumes) on a drop
            yield parsed.to_dict(mode="json") if hasattr(parsed, "to_dict") else dict(parsed)

    async def _read(self, conn: AsyncRealtimeConnection) -> None:
        async for event in self._events(conn):
            if self._resume is not None:
                self._resume_check.on_event(event, self._session_id)
            if event.get("type") == "session.created":
                self._session_id = str((event.get("session") or {}).get("id", ""))
                if self._resume is not None:
                    self._resume.session_id = self._session_id
                self._session_known.set()
            rec = self._current
            if rec is not None and rec.done is None:
                self._on_event(event, rec)
            if self._answer:
                await self._answer_calls(conn)

    async def _answer_calls(self, conn: AsyncRealtimeConnection) -> None:
        """The calls' output, then the turn's spoken answer (no call this time)."""
        calls, self._answer = self._answer, []
        for call_id in calls:
            item = {"type": "function_call_output", "call_id": call_id, "output": WEATHER_OUTPUT}
            await conn.send_raw(json.dumps({"type": "conversation.item.create", "item": item}))
        answer = {"tool_choice": "none", "max_output_tokens": self.settings.max_output_tokens}
        await conn.send_raw(json.dumps({"type": "response.create", "response": answer}))

    def _on_event(self, event: dict[str, Any], rec: TurnRecord) -> None:
        now = self.state.clock.now()
        kind = str(event.get("type", ""))
        if not rec.speech_end and kind.startswith("response.output_audio"):
            return  # the end of an answer the caller barged into, before this turn's speech ended
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
        elif kind == "response.function_call_arguments.done":
            self.state.calls.setdefault((rec.caller, rec.turn), []).append(str(event.get("call_id", "")))
        elif kind == "response.done":
            self._on_done(event.get("response") or {}, rec, now)
        elif kind == "error":
            err = event.get("error") or {}
            rec.error = f"{err.get('code') or err.get('type')}: {err.get('message')}"
        elif kind.startswith(VENDOR_PREFIX):
            note_vendor(kind, event, rec, now)

    def _on_done(self, response: dict[str, Any], rec: TurnRecord, now: float) -> None:
        status = str(response.get("status", ""))
        if not rec.speech_end and status == "cancelled":
            return  # VAD cut the utterance early and our own speech barged in: not this turn's answer
        called = [
            str(o.get("call_id", ""))
            for o in response.get("output") or []
            if o.get("type") == "function_call"
        ]
        if self.tools and called and status == "completed":
            self._answer = called  # the turn goes on: its output, then the spoken answer
            note_route(response, rec)
            return
        note_route(response, rec)
        rec.status, rec.done = status or "unknown", now
        self._turn_done.set()
        self.state.moments.emit("done", rec)


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
        # The last callers call functions: the first (whose turn times the fault) speaks as before.
        tools = i >= count - settings.tool_callers
        await Caller(i, edge, utterances, settings, state, tools=tools).run()

    await asyncio.gather(*(one(i) for i in range(count)))
    return state.records
