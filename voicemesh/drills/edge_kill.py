"""An edge SIGKILLed mid-answer behind the front door, as a stock openai SDK client hears it.

``kill_mid_answer`` speaks one turn through the deployment's one URL (``voicemesh up``'s front door)
with the stock SDK (its own reconnects; the ``on_reconnecting`` hook adds ``session_id``), waits until
the answer's audio flows, SIGKILLs the edge serving the session (found by the edges' ``/status``,
killed by its pid file), and follows the SDK through its reconnect to another edge, the resume
(``voicemesh.session.resumed``) and the continuation of the cut answer to its ``response.done``.

The figure is the silence the caller heard before the answer went on: a real-time player started at
the first audio chunk (``voicemesh.drills.records``, as in the drills' failover gap), so the audio
already buffered at the client when the edge died plays on and counts in the caller's favour; the
silence runs from the moment that player ran out to the continuation's first audio delta. Kept
beside it: the raw gap (the old connection's last audio delta to the continuation's first), the drills'
failover gap (the longest silence after the kill, stalls within the continuation included), and
where the time went: the kill to the SDK's new ``session.created``, to ``resumed``, to the first
events of the continuation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infra.processes import read_pid
from voicemesh.drills.edges import serving_index
from voicemesh.drills.faults import FaultMark
from voicemesh.drills.records import TurnRecord, playback_end
from voicemesh.drills.slo import failover_gap
from voicemesh.processes import kill_tree
from voicemesh.realtime import Resuming, client, delta_seconds, pcm_chunks, send_audio, session_config, tick
from wire.audio import CLIENT_RATE
from wire.errors import VoicemeshError

Report = Callable[[str], None]

QUESTION = "Tell me a long story about a brave knight, a dragon and a castle."


class EdgeKillError(VoicemeshError):
    code = "edge_kill_failed"


@dataclass(frozen=True)
class EdgeRef:
    """One edge behind the front door: its id, its own URL (``/status``) and its pid file."""

    id: str
    url: str
    pid_file: Path


@dataclass
class KillRun:
    """One kill, on a clock that starts when the turn's speech ends (seconds)."""

    killed: str = ""
    """The edge that served the answer and was SIGKILLed."""
    kill_at: float = 0.0
    reconnects: int = 0
    resumed: bool = False
    continuing: bool = False
    status: str = ""
    """The continuation's ``response.done`` status."""
    heard_before: str = ""
    """The answer's transcript the client had when the edge died."""
    replayed_heard: str = ""
    """The cut answer as the resumed session replayed it (``incomplete``): the heard part."""
    continuation: str = ""
    """The transcript of the response that finished it."""
    session_created_s: float | None = None
    """Kill -> the new connection's ``session.created`` (the SDK's back-off + the connect + resume)."""
    resumed_s: float | None = None
    continuation_audio_s: float | None = None
    """Kill -> the continuation's first audio delta (the first after ``resumed``)."""
    raw_gap_s: float | None = None
    """The last audio delta of the old connection -> the continuation's first."""
    silence_s: float | None = None
    """What the caller heard: from when its player ran out of the audio it had to the continuation's
    first audio delta (0 when that came before the player ran out)."""
    longest_silence_s: float | None = None
    """The drills' failover gap: the longest silence a real-time player played after the kill."""
    after_kill: dict[str, float] = field(default_factory=dict)
    """Each event type's first arrival after the kill, seconds after it."""
    arrivals: list[tuple[float, float]] = field(default_factory=list, repr=False)
    events: list[str] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _transcript(item: Any) -> str:
    return "".join(
        getattr(part, "transcript", None) or getattr(part, "text", None) or "" for part in item.content
    )


async def serving_edge(edges: Sequence[EdgeRef], session_id: str, admin_key: str) -> EdgeRef | None:
    """The edge whose ``/status`` lists ``session_id`` (the one serving it now)."""
    found = await serving_index([edge.url for edge in edges], session_id, admin_key)
    return None if found is None else edges[found]


@dataclass
class _Turn:
    """The client's side of the run: the events as they arrive, the kill as a task beside them."""

    edges: Sequence[EdgeRef]
    admin_key: str
    kill_after_audio_s: float
    run: KillRun = field(default_factory=KillRun)
    resume: Resuming = field(default_factory=Resuming)
    """The SDK's ``on_reconnecting``: resume the session on whichever edge the front door picks."""
    t0: float = 0.0
    audio_s: float = 0.0
    resumed_index: int | None = None
    continuation_from: int | None = None
    """Index in ``arrivals`` of the continuation's first delta (those before came on the old
    connection, some of them after the kill: already in flight, and played like the rest)."""
    kill_task: asyncio.Task[None] | None = None

    def now(self) -> float:
        return time.monotonic() - self.t0

    @property
    def session_id(self) -> str:
        return self.resume.session_id

    async def kill(self) -> None:
        edge = await serving_edge(self.edges, self.session_id, self.admin_key)
        if edge is None:
            raise EdgeKillError(f"no edge's /status lists session {self.session_id}")
        pid = read_pid(edge.pid_file)
        if pid is None:
            raise EdgeKillError(f"no pid in {edge.pid_file}")
        self.run.kill_at = self.now()
        kill_tree(pid)  # SIGKILL: no drain, no goodbye
        self.run.killed = edge.id

    def on_event(self, event: Any) -> bool:
        """Record ``event``; True once the continuation's ``response.done`` is in."""
        run, kind = self.run, str(getattr(event, "type", ""))
        run.events.append(kind)
        killed = bool(run.kill_at)
        if killed:
            run.after_kill.setdefault(kind, round(self.now() - run.kill_at, 3))
        if kind == "session.created":
            if not self.session_id:
                self.resume.seen(event)
            elif killed and run.session_created_s is None:
                run.session_created_s = self.now() - run.kill_at
        elif kind == "voicemesh.session.resumed":
            body = json.loads(event.model_dump_json())
            run.resumed, run.continuing = True, bool(body.get("continuing"))
            run.resumed_s = self.now() - run.kill_at
            self.resumed_index = len(run.events)
        elif kind == "conversation.item.done" and self.resumed_index is None and killed:
            item = event.item
            if item.role == "assistant" and item.status == "incomplete":
                run.replayed_heard = _transcript(item)
        elif kind == "response.output_audio_transcript.delta":
            if not killed:
                run.heard_before += event.delta
            elif self.resumed_index is not None:
                run.continuation += event.delta
        elif kind == "response.output_audio.delta":
            seconds = delta_seconds(event.delta)
            run.arrivals.append((self.now(), seconds))
            self.audio_s += seconds
            if self.resumed_index is not None and run.continuation_audio_s is None:
                self.continuation_from = len(run.arrivals) - 1
                run.continuation_audio_s = self.now() - run.kill_at
            if self.kill_task is None and self.audio_s >= self.kill_after_audio_s:
                self.kill_task = asyncio.create_task(self.kill())
        elif kind == "response.done" and killed and self.resumed_index is not None:
            run.status = event.response.status or ""
            return True
        elif kind == "response.done":
            raise EdgeKillError(f"the answer ended ({event.response.status}) before the edge was killed")
        return False


async def kill_mid_answer(
    url: str,
    api_key: str,
    admin_key: str,
    edges: Sequence[EdgeRef],
    speech_pcm: bytes,
    *,
    kill_after_audio_s: float = 1.5,
    reconnect_delay_s: float | None = None,
    max_output_tokens: int = 80,
    timeout_s: float = 180.0,
) -> KillRun:
    """Speak ``speech_pcm`` (24 kHz PCM16) through ``url`` (the front door's ``ws://.../v1``), SIGKILL
    the edge serving the answer once ``kill_after_audio_s`` of it has arrived, and follow the SDK
    through the resume to the end of the continuation.

    ``reconnect_delay_s``: the SDK's ``initial_delay`` (its first back-off before reconnecting);
    None keeps the SDK's default (0.5 s, less up to a quarter of jitter)."""
    turn = _Turn(edges, admin_key, kill_after_audio_s)
    options: dict[str, Any] = {} if reconnect_delay_s is None else {"initial_delay": reconnect_delay_s}
    rt = client(url, api_key).realtime
    async with asyncio.timeout(timeout_s):
        async with rt.connect(
            model="voicemesh", on_reconnecting=turn.resume, max_retries=6, **options
        ) as conn:
            turn.on_event(await conn.recv())
            await conn.session.update(session=session_config(max_output_tokens=max_output_tokens))  # type: ignore[arg-type]
            await _speak(conn, speech_pcm)
            turn.t0 = time.monotonic()
            try:
                async for event in conn:
                    if turn.on_event(event):
                        break
            finally:
                if turn.kill_task is not None:
                    with contextlib.suppress(asyncio.CancelledError):
                        await turn.kill_task
    return _finish(turn)


async def _speak(conn: Any, pcm: bytes) -> None:
    """The question in real time, then a second of silence for the server VAD to end the turn."""
    chunks = pcm_chunks(pcm + bytes(CLIENT_RATE * 2))
    start = time.monotonic()
    for i, chunk in enumerate(chunks):
        await send_audio(conn, chunk)
        await tick(start, i + 1, 0.04)


def _finish(turn: _Turn) -> KillRun:
    run = turn.run
    run.reconnects = turn.resume.reconnects
    if not run.kill_at:
        raise EdgeKillError("the edge was never killed (the answer had too little audio)")
    if turn.continuation_from:
        before, first = run.arrivals[: turn.continuation_from], run.arrivals[turn.continuation_from][0]
        run.raw_gap_s = first - before[-1][0]
        run.silence_s = max(0.0, first - playback_end(before))
    record = TurnRecord(
        caller=0, turn=1, session_id=turn.session_id, text=QUESTION, voice="", speech_start=0.0,
        speech_end=1e-9, status=run.status, done=turn.now(), arrivals=run.arrivals,
        audio_s=sum(seconds for _, seconds in run.arrivals),
    )  # fmt: skip
    run.longest_silence_s = failover_gap(record, FaultMark(at=run.kill_at, kind="SIGKILL", region=run.killed))
    return run
