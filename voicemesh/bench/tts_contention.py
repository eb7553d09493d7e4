"""Kokoro on an opening clause, alone and beside a vLLM that decodes, at 1 and at ``wide`` threads.

What decided the cpu profile's levers (docs/benchmarks.md "Levers found end to end"): how much a
decoding LLM on the same cores slows the first clause's synthesis, and whether more onnxruntime
threads help or hurt. Run it against each vLLM set-up to compare (e.g. the default worker process
against ``--distributed-executor-backend uni``); states alternate clause by clause.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import httpx

from region.cancel import CancelToken
from region.settings import LlmSettings, TtsSettings
from region.tts import Synthesizer

CLAUSES = ("Sure, to boil an egg,", "The capital of France", "The sky is blue because")


@contextlib.asynccontextmanager
async def decoding(llm: LlmSettings, url: str) -> AsyncIterator[None]:
    """vLLM writing long answers, one after another, until the block ends."""

    async def loop() -> None:
        body = {
            "model": llm.served_name,
            "messages": [{"role": "user", "content": "Write a long story about a dragon."}],
            "max_tokens": 400,
            "stream": True,
        }
        async with httpx.AsyncClient(base_url=url.rstrip("/"), timeout=120) as http:
            while True:
                async with http.stream("POST", "/chat/completions", json=body) as r:
                    async for _ in r.aiter_raw():
                        pass

    task = asyncio.create_task(loop())
    await asyncio.sleep(2.0)  # past the prefill: decoding
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
            await task


async def run_tts_contention(
    tts: TtsSettings, llm: LlmSettings, url: str, *, wide: int, rounds: int, report: Callable[[str], None]
) -> str:
    """The table: p50 seconds per clause for each thread count, alone and beside decoding."""
    synths: dict[int, Synthesizer] = {}
    for threads in sorted({1, wide}):
        report(f"loading Kokoro with {threads} thread(s)")
        synths[threads] = Synthesizer(replace(tts, intra_op_threads=threads, wide_intra_op_threads=0))
        await synths[threads].load()

    async def measure(state: str) -> dict[int, list[float]]:
        times: dict[int, list[float]] = {n: [] for n in synths}
        for r in range(rounds):
            for clause in CLAUSES:
                for n, synth in synths.items():
                    t = time.perf_counter()
                    await synth.synthesize(clause, "", CancelToken())
                    times[n].append(time.perf_counter() - t)
            report(f"{state}: round {r + 1}/{rounds}")
        return times

    alone = await measure("alone")
    async with decoding(llm, url):
        beside = await measure("beside decoding")
    rows = ["threads  alone p50 s  beside decoding p50 s  ratio"]
    for n in synths:
        a, b = statistics.median(alone[n]), statistics.median(beside[n])
        rows.append(f"{n:7d}  {a:11.2f}  {b:21.2f}  {b / a:5.2f}")
    return "\n".join(rows)
