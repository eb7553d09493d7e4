"""``voicemesh bench region``: per-stage latency over repeated turns, streaming vs naive, and cancels.

Part 1 sends real turns over the turn protocol to a region (started here in-process, or one given
by URL) and reports each stage's p50/p95 from ``turn.done`` timings. Part 2 runs the streaming and
the naive pipeline alternately on the same loaded models and the same utterance (temperature 0, so
both get the same answer) and compares their time to first audio. Part 3 cancels real turns on the
region mid-answer and mid-STT and times how fast every stage stops (``region_cancel``). Part 4
(``--lever``) measures latency levers on vs off, alternating (``region_levers``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx
import msgspec
import numpy as np

from region.node import RegionNode
from region.pipeline import NaivePipeline, Pipeline
from region.settings import RegionSettings
from region.streaming import StreamingPipeline
from region.turn_state import Turn
from voicemesh.bench.region_cancel import CancelSample, cancel_summary, measure_cancels
from voicemesh.bench.region_levers import LeverSample, kokoro_cpu_s, lever_summary, measure_lever
from voicemesh.local_region import serve_local_region
from voicemesh.processes import free_port
from voicemesh.speech import espeak
from wire.audio import STT_RATE, FloatAudio, float_to_pcm16
from wire.client import ClauseAudio, run_turn
from wire.errors import VoicemeshError
from wire.region_auth import ClientAuth
from wire.tasks import Stopped, unless_stopped
from wire.turn import TurnStart

Report = Callable[[str], None]

STAGES = (
    "queued_s",
    "stt_s",
    "llm_ttft_s",
    "first_clause_s",
    "tts_first_audio_s",
    "first_audio_s",
    "total_s",
)


@dataclass(frozen=True)
class BenchOptions:
    url: str | None = None
    turns: int = 5
    utterance: str = "Please tell me a short story about a cat."
    max_output_tokens: int = 60
    voice: str = ""
    cancels: int = 5
    """Cancels at each moment (mid-answer, mid-STT); 0 skips the cancel measurement."""
    levers: tuple[str, ...] = ()
    """Levers to measure on vs off (``region_levers.LEVERS``), after the parts above."""
    lever_rounds: int = 6
    concurrency: tuple[int, ...] = (1, 2)
    """Concurrent turns each lever is measured at."""


def espeak_utterance(text: str) -> FloatAudio:
    """``text`` spoken by espeak-ng (a different voice from any the region speaks), 16 kHz float."""
    pad = np.zeros(int(0.3 * STT_RATE), dtype=np.float32)
    return np.concatenate([pad, espeak(text, STT_RATE, speed=150) * 0.8, pad])


def percentiles(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


async def run_bench(
    options: BenchOptions, settings: RegionSettings, *, stop: asyncio.Event, report: Report
) -> str:
    """Run the benchmark; returns the summary table. Setting ``stop`` abandons it at once."""
    try:
        return await unless_stopped(_bench(options, settings, stop, report), stop)
    except Stopped:
        return "benchmark interrupted"


async def _bench(options: BenchOptions, settings: RegionSettings, stop: asyncio.Event, report: Report) -> str:
    audio = espeak_utterance(options.utterance)
    pcm = float_to_pcm16(audio)
    report(f"utterance: {options.utterance!r} ({len(audio) / STT_RATE:.1f} s of espeak-ng speech)")
    async with bench_region_node(options, settings, report) as (base, node):
        start = TurnStart(
            turn_id="bench", voice=options.voice, max_output_tokens=options.max_output_tokens, temperature=0.0
        )
        report("warm-up turn")
        await run_turn(base, msgspec.structs.replace(start, turn_id="warm"), pcm)
        wire_timings: list[dict[str, float]] = []
        client_first_audio: list[float] = []
        for i in range(options.turns):
            if stop.is_set():
                break
            result = await run_turn(base, msgspec.structs.replace(start, turn_id=f"bench-{i}"), pcm)
            if result.status != "completed" or result.first_audio_s is None:
                raise VoicemeshError(
                    f"bench turn {i} ended {result.status}: {result.error or result.timings}"
                )
            wire_timings.append(result.timings)
            client_first_audio.append(result.first_audio_s)
            report(
                f"turn {i + 1}/{options.turns}: first audio {result.first_audio_s:.2f} s,"
                f" text {result.text[:60]!r}"
            )
        side = await _side_by_side(node, start, audio, options.turns, stop, report)
        cancels: list[CancelSample] = []
        if options.cancels > 0 and not stop.is_set():
            report(f"cancels ({options.cancels} mid-answer, {options.cancels} mid-STT)")
            cancels = await measure_cancels(
                base, node.stages.llm.url, start, pcm, options.cancels, stop=stop, report=report
            )
        levers: list[LeverSample] = []
        for lever in options.levers:
            for concurrency in options.concurrency:
                levers += await measure_lever(
                    lever, node, start, audio, rounds=options.lever_rounds, concurrency=concurrency,
                    stop=stop, report=report,
                )  # fmt: skip
        kokoro_cpu: dict[str, float] = {}
        for chunk in sorted({s.first_chunk for s in levers if s.lever == "first-chunk"}):
            if not stop.is_set():
                kokoro_cpu[chunk] = await kokoro_cpu_s(node, chunk, options.voice)
    summary = _summary(options, len(audio) / STT_RATE, wire_timings, client_first_audio, side)
    parts = [summary]
    if cancels:
        parts += ["", *cancel_summary(cancels)]
    if levers:
        parts += ["", *lever_summary(levers, kokoro_cpu)]
    return "\n".join(parts)


@contextlib.asynccontextmanager
async def bench_region_node(
    options: BenchOptions, settings: RegionSettings, report: Report
) -> AsyncIterator[tuple[str, RegionNode]]:
    """(base URL, a warm node on this machine): the region under test and models for part 2."""
    if options.url:
        async with httpx.AsyncClient() as http:
            health = (
                await http.get(options.url.rstrip("/") + "/health", headers=ClientAuth.from_env().headers())
            ).json()
        llm_url = settings.llm.url or health.get("llm_url")
        if not llm_url:
            raise VoicemeshError("give --llm-url: the region did not say which LLM it uses")
        node = RegionNode.from_settings(settings, llm_url, report=report)
        await node.warm_up()
        try:
            yield options.url.rstrip("/"), node
        finally:
            await node.aclose()
        return
    port = free_port()
    settings = replace(settings, port=port)
    ready: asyncio.Future[RegionNode] = asyncio.get_running_loop().create_future()
    stop_region = asyncio.Event()
    task = asyncio.create_task(
        serve_local_region(settings, stop=stop_region, report=report, on_ready=ready.set_result),
        name="bench region",
    )
    try:
        either: set[asyncio.Future[Any]] = {task, ready}
        done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()  # it failed before ready: raise why
        yield f"http://127.0.0.1:{port}", ready.result()
    finally:
        stop_region.set()
        await asyncio.wait({task})


async def _side_by_side(
    node: RegionNode, start: TurnStart, audio: FloatAudio, n: int, stop: asyncio.Event, report: Report
) -> dict[str, list[float]]:
    pipelines: dict[str, Pipeline] = {
        "streaming": StreamingPipeline(node.stages),
        "naive": NaivePipeline(node.stages),
    }
    out: dict[str, list[float]] = {name: [] for name in pipelines}
    for i in range(n):
        for name, pipeline in pipelines.items():  # alternate, so load drifts hit both alike
            if stop.is_set():
                return out
            turn = Turn(msgspec.structs.replace(start, turn_id=f"{name}-{i}"), audio=audio)
            events = pipeline.run(turn)
            try:
                async for ev in events:
                    if isinstance(ev, ClauseAudio):
                        break  # only time to first audio is compared: the rest would just burn CPU
            finally:
                await events.aclose()
            if "first_audio_s" not in turn.timings:
                raise VoicemeshError(f"the {name} pipeline produced no audio (answer: {turn.text!r})")
            out[name].append(turn.timings["first_audio_s"])
        report(
            f"side by side {i + 1}/{n}: streaming {out['streaming'][-1]:.2f} s,"
            f" naive {out['naive'][-1]:.2f} s"
        )
    return out


def _summary(
    options: BenchOptions,
    utterance_s: float,
    timings: list[dict[str, float]],
    client_first_audio: list[float],
    side: dict[str, list[float]],
) -> str:
    lines = [
        f"Region turns over the turn protocol: {len(timings)} turns, {utterance_s:.1f} s utterance, "
        f"max {options.max_output_tokens} output tokens",
        f"{'stage':<22}{'p50 s':>8}{'p95 s':>8}",
    ]
    for key in STAGES:
        values = [t[key] for t in timings if key in t]
        if values:
            p50, p95 = percentiles(values)
            lines.append(f"{key:<22}{p50:>8.3f}{p95:>8.3f}")
    if client_first_audio:
        p50, p95 = percentiles(client_first_audio)
        lines.append(f"{'client first audio':<22}{p50:>8.3f}{p95:>8.3f}")
    if side["streaming"] and side["naive"]:
        s50, s95 = percentiles(side["streaming"])
        n50, n95 = percentiles(side["naive"])
        lines += [
            "",
            f"Time to first audio, same models, same utterance, alternating ({len(side['naive'])} each):",
            f"{'pipeline':<22}{'p50 s':>8}{'p95 s':>8}",
            f"{'streaming':<22}{s50:>8.3f}{s95:>8.3f}",
            f"{'naive':<22}{n50:>8.3f}{n95:>8.3f}",
            f"streaming / naive (p50) = {s50 / n50:.2f}  (target <= 0.50)",
        ]
    return "\n".join(lines)
