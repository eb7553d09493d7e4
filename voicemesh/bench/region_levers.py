"""``voicemesh bench region --lever NAME``: one latency lever on and off, alternating, on the same
loaded models, utterance and answer (temperature 0), at 1 and more concurrent turns.

Levers (what each toggles between rounds):

* ``priority``: the niceness of the running vLLM (every thread of its process tree,
  ``renice_tree``), at the profile's value (10 if it has none) and at 0. Lowering it back needs
  CAP_SYS_NICE (root), and the vLLM must run on this machine (found by its port).
* ``first-chunk``: the chunker's ``first_words``, at the profile's value (4 if it has none) and 0.

Each turn runs the streaming pipeline until its second clause's audio *and* the end of its LLM
answer (so the LLM's decode rate is seen while TTS speaks the clauses), then is closed. Per state
it reports p50 / p95 of the turn's first audio, Kokoro's first clause, the first complete clause,
the LLM's tokens per second after its first token, the silence a listener would hear between the
first clause's audio and the second's (``stall_after_first_s``), and the first chunk's words;
the on / off ratio is of the p50s, both states alternating (on-off, then off-on) so load drifts
hit both alike.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from urllib.parse import urlsplit

import msgspec
import numpy as np
import psutil

from region.cancel import CancelToken
from region.node import RegionNode
from region.streaming import StreamingPipeline
from region.turn_state import Turn
from voicemesh.llm_server import renice_tree
from voicemesh.processes import listening_pid
from voicemesh.profiles import FIRST_CHUNK_WORDS
from wire.audio import FloatAudio
from wire.client import ClauseAudio
from wire.errors import VoicemeshError
from wire.text import ClauseChunker
from wire.turn import TurnStart

Report = Callable[[str], None]

LEVERS = ("priority", "first-chunk")
DEFAULT_NICE = 10
FIGURES = ("first_audio_s", "tts_first_audio_s", "first_clause_s", "tokens_per_s", "stall_after_first_s")


@dataclass(frozen=True)
class LeverSample:
    lever: str
    on: bool
    concurrency: int
    figures: dict[str, float]
    first_chunk: str


class _Toggle:
    """Switches one lever of a warm node; ``restore()`` puts back what was there."""

    def __init__(self, lever: str, node: RegionNode) -> None:
        self.lever = lever
        self.node = node
        self._stages = node.stages
        self._pid: int | None = None
        self._nice = 0
        if lever == "priority":
            port = urlsplit(node.stages.llm.url).port
            self._pid = listening_pid(port) if port else None
            if self._pid is None:
                raise VoicemeshError(
                    "--lever priority needs the vLLM on this machine: "
                    f"nothing local listens for {node.stages.llm.url}"
                )
            self._nice = node.settings.llm.nice or DEFAULT_NICE
            self._was = _nice_of(self._pid)
        elif lever == "first-chunk":
            self._words = node.settings.tts.first_chunk_words or FIRST_CHUNK_WORDS
        else:
            raise VoicemeshError(f"unknown lever {lever!r}: choose from {', '.join(LEVERS)}")

    def describe(self, on: bool) -> str:
        if self.lever == "priority":
            return f"vLLM nice {self._nice if on else 0}"
        return f"first chunk {self._words if on else 0} words"

    def set(self, on: bool) -> StreamingPipeline:
        if self._pid is not None:
            try:
                renice_tree(self._pid, self._nice if on else 0)
            except PermissionError as exc:
                raise VoicemeshError(
                    f"--lever priority cannot renice vLLM back to 0 ({exc}): run as root"
                ) from None
            return StreamingPipeline(self._stages)
        words = self._words if on else 0
        return StreamingPipeline(replace(self._stages, chunker=partial(ClauseChunker, first_words=words)))

    def restore(self) -> None:
        if self._pid is not None:
            renice_tree(self._pid, self._was)


def _nice_of(pid: int) -> int:
    return int(psutil.Process(pid).nice())


async def _one_turn(pipeline: StreamingPipeline, start: TurnStart, audio: FloatAudio) -> Turn:
    turn = Turn(start, audio=audio)
    events = pipeline.run(turn)
    clauses: list[tuple[float, float]] = []  # (arrival since the turn's start, its audio's length)
    try:
        async for ev in events:
            if isinstance(ev, ClauseAudio):
                c = ev.clause
                clauses.append((time.perf_counter() - turn.t0, c.audio_bytes / 2 / c.sample_rate))
                if "llm_s" in turn.timings and len(clauses) >= 2:
                    break  # two clauses out and the answer written: the rest is only more TTS
    finally:
        await events.aclose()
    if "first_audio_s" not in turn.timings:
        raise VoicemeshError(f"turn {start.turn_id} produced no audio (answer: {turn.text!r})")
    if len(clauses) >= 2:
        (first_at, first_s), (second_at, _) = clauses[:2]
        # Played at once, the first clause ends at first_at + first_s: silence until the second.
        turn.timings["stall_after_first_s"] = max(0.0, second_at - (first_at + first_s))
    return turn


def _figures(turn: Turn) -> dict[str, float]:
    t = turn.timings
    out = {k: t[k] for k in FIGURES if k in t}
    decode_s = t.get("llm_s", 0.0) - t.get("llm_ttft_s", 0.0)
    if turn.usage and turn.usage.output_tokens > 1 and decode_s > 0:
        out["tokens_per_s"] = (turn.usage.output_tokens - 1) / decode_s
    return out


def _first_chunk(turn: Turn, chunker: Callable[[], ClauseChunker]) -> str:
    c = chunker()
    clauses = c.feed(turn.text)
    return clauses[0] if clauses else (c.flush() or "")


async def measure_lever(
    lever: str,
    node: RegionNode,
    start: TurnStart,
    audio: FloatAudio,
    *,
    rounds: int,
    concurrency: int,
    stop: asyncio.Event,
    report: Report,
) -> list[LeverSample]:
    toggle = _Toggle(lever, node)
    samples: list[LeverSample] = []
    try:
        for i in range(rounds):
            for on in (True, False) if i % 2 == 0 else (False, True):
                if stop.is_set():
                    return samples
                pipeline = toggle.set(on)
                starts = [
                    msgspec.structs.replace(start, turn_id=f"{lever}-{on}-{i}-{k}")
                    for k in range(concurrency)
                ]
                turns = await asyncio.gather(*(_one_turn(pipeline, s, audio) for s in starts))
                for turn in turns:
                    first = _first_chunk(turn, pipeline.stages.chunker) if start.output_audio else ""
                    samples.append(LeverSample(lever, on, concurrency, _figures(turn), first))
                report(
                    f"{lever} x{concurrency} round {i + 1}/{rounds} {toggle.describe(on)}: first audio "
                    + ", ".join(f"{t.timings['first_audio_s']:.2f} s" for t in turns)
                )
    finally:
        toggle.restore()
    return samples


async def kokoro_cpu_s(node: RegionNode, text: str, voice: str, runs: int = 3) -> float:
    """Median CPU seconds this process spends synthesising ``text`` (nothing else runs in it then):
    a figure the other load on the machine hardly moves, unlike wall time."""
    spent = []
    for _ in range(runs):
        t = time.process_time()
        await node.stages.tts.synthesize(text, voice, CancelToken())
        spent.append(time.process_time() - t)
    return float(np.median(spent))


def lever_summary(samples: list[LeverSample], cpu: dict[str, float] | None = None) -> list[str]:
    if not samples:
        return []
    lines = ["Levers, on vs off alternating on the same models and utterance (p50 / p95):"]
    groups = sorted({(s.lever, s.concurrency) for s in samples})
    for lever, concurrency in groups:
        group = [s for s in samples if s.lever == lever and s.concurrency == concurrency]
        lines.append(f"{lever}, {concurrency} concurrent turn(s), {len(group) // 2} turns each:")
        lines.append(f"  {'figure':<20}{'on p50':>9}{'on p95':>9}{'off p50':>9}{'off p95':>9}{'on/off':>8}")
        for fig in FIGURES:
            on = [s.figures[fig] for s in group if s.on and fig in s.figures]
            off = [s.figures[fig] for s in group if not s.on and fig in s.figures]
            if on and off:
                on50, on95 = np.percentile(on, [50, 95])
                off50, off95 = np.percentile(off, [50, 95])
                ratio = f"{on50 / off50:.2f}" if off50 > 0 else "-"
                lines.append(f"  {fig:<20}{on50:>9.3f}{on95:>9.3f}{off50:>9.3f}{off95:>9.3f}{ratio:>8}")
        for state in (True, False):
            chunks = sorted({s.first_chunk for s in group if s.on is state})
            lines.append(
                f"  first chunk ({'on' if state else 'off'}): " + " | ".join(repr(c) for c in chunks)
            )
    if cpu:
        lines.append("Kokoro CPU seconds per first chunk (median of 3, nothing else in this process):")
        lines += [f"  {seconds:6.3f} s  {text!r}" for text, seconds in cpu.items()]
    return lines
