"""Silences inside answers at 1, 2 and 4 concurrent callers: the region's clause schedule measured.

``python -m voicemesh.bench.answer_silences [--callers 1,2,4]``: real Kokoro (the cpu profile's,
from ``voicemesh models fetch``), the region's real ``StreamingPipeline``, chunker and ``CpuOrder``
with the profile's ``model_runs``; callers start ``stagger_s`` apart, so one's first clause meets
another's later ones. The LLM is a stand-in that writes a fixed answer at ``tokens_per_s``: what is
measured is how the region schedules and sizes clauses, not the words (the e2e bench runs vLLM).
Each config is the same load: ``before`` (whole sentences after the first chunk, later clauses
behind every first clause), ``sched`` (growing clauses, later clauses by when their caller runs dry)
and ``hold`` (that, and the first audio held up to ``HOLD_S`` for the next clause). A
chunk's arrival is when the pipeline yields it; the caller plays them back to back
(``voicemesh.bench.silences``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

from region.cpu_order import CpuOrder
from region.settings import RegionSettings
from region.streaming import StreamingPipeline
from region.testing.models import FixedTranscript
from region.tts import Synthesizer
from region.turn_state import Stages, Turn
from region.workload import Workload
from voicemesh.bench.silences import mid_answer_silences
from voicemesh.profiles import FIRST_CHUNK_WORDS, cpu_profile
from wire.audio import REGION_OUT_RATE
from wire.client import ClauseAudio
from wire.text import ClauseChunker
from wire.turn import TokenUsage, ToolCall, TurnStart

ANSWER = (
    "Sure, to boil an egg, place it in a small pot of cold water and bring the water to a gentle boil. "
    "Then turn the heat down and let it simmer for about nine minutes for a firm yolk. "
    "Cool it in a bowl of ice water before you peel it."
)


HOLD_S = 1.0
"""The ``hold`` config's first-audio hold (the profiles' is off: ``VOICEMESH_FIRST_AUDIO_HOLD_MS``)."""


class PacedLlm:
    """Stands in for vLLM (the words are not under test): ``ANSWER`` a word at a time, paced."""

    ready = True
    url = "memory://paced-llm"

    def __init__(self, tokens_per_s: float) -> None:
        self.pause_s = 1.0 / tokens_per_s

    async def load(self) -> None:
        pass

    async def stream(
        self, start: TurnStart, user_text: str, *, stop_after: int = 0
    ) -> AsyncIterator[str | ToolCall | TokenUsage]:
        for i, word in enumerate(ANSWER.split(" ")):
            await asyncio.sleep(self.pause_s)
            yield word if i == 0 else " " + word

    async def check(self) -> None:
        pass  # (always up: no server behind it)

    async def aclose(self) -> None:
        pass


class _LaterBehindFirst(CpuOrder):
    """The order before: a later clause waits behind every first clause (``promote_after_s``)."""

    @asynccontextmanager
    async def slot(
        self, *, urgent: bool, start_by: float | None = None, expected_s: float = 0.0
    ) -> AsyncIterator[None]:
        async with super().slot(urgent=urgent):
            yield


@dataclass(frozen=True)
class Answer:
    config: str
    callers: int
    ttfa_s: float
    longest_s: float
    total_s: float


async def _caller(pipeline: StreamingPipeline, name: str, delay_s: float) -> list[tuple[float, float]]:
    await asyncio.sleep(delay_s)
    turn = Turn(TurnStart(turn_id=name, text="How do I boil an egg?", max_output_tokens=400))
    chunks = [(time.monotonic(), 0.0)]  # the turn's start: TTFA is the first chunk's arrival after it
    async for event in pipeline.run(turn):
        if isinstance(event, ClauseAudio):
            chunks.append((time.monotonic(), len(event.pcm) / 2 / REGION_OUT_RATE))
    return chunks


async def measure(
    callers: Sequence[int], stagger_s: float, tokens_per_s: float, repeats: int = 1
) -> list[Answer]:
    profile = cpu_profile()
    runs = RegionSettings(region_id="bench", stt=profile.stt, llm=profile.llm, tts=profile.tts).model_runs
    work = Workload()
    tts = Synthesizer(profile.tts, work)
    await tts.load()
    later = partial(ClauseChunker, first_words=FIRST_CHUNK_WORDS, later_words=profile.tts.later_chunk_words)
    configs = {  # (chunker, order, first audio hold)
        "before": (partial(ClauseChunker, first_words=FIRST_CHUNK_WORDS), _LaterBehindFirst, 0.0),
        "sched": (later, CpuOrder, 0.0),
        "hold": (later, CpuOrder, HOLD_S),
    }
    out: list[Answer] = []
    for n in callers:
        for _ in range(repeats):  # configs take turns: the machine's load drifts alike for each
            for name, (chunker, order, hold_s) in configs.items():
                stages = Stages(
                    stt=FixedTranscript(), llm=PacedLlm(tokens_per_s), tts=tts, chunker=chunker,
                    workload=work, order=order(runs), first_audio_hold_s=hold_s,
                )  # fmt: skip
                pipeline = StreamingPipeline(stages)
                timelines = await asyncio.gather(
                    *(_caller(pipeline, f"{name}-{n}-{i}", i * stagger_s) for i in range(n))
                )
                for (start, _), *chunks in timelines:
                    s = mid_answer_silences(chunks)
                    out.append(Answer(name, n, chunks[0][0] - start, s.longest_s, s.total_s))
        for name in configs:
            print(_line([a for a in out if a.config == name and a.callers == n]), flush=True)
    return out


def _line(answers: Sequence[Answer]) -> str:
    a = answers[0]
    return (
        f"{a.callers} caller(s) {a.config:6}: TTFA p50 {statistics.median(x.ttfa_s for x in answers):.2f} s, "
        f"mid-answer silence longest {max(x.longest_s for x in answers):.2f} s, "
        f"total p50 {statistics.median(x.total_s for x in answers):.2f} s "
        f"(max {max(x.total_s for x in answers):.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--callers", default="1,2,4", help="concurrent callers per pass, e.g. 1,2,4")
    parser.add_argument("--stagger-s", type=float, default=1.0, help="seconds between callers' starts")
    parser.add_argument("--tokens-per-s", type=float, default=25.0, help="the stand-in LLM's pace")
    parser.add_argument("--repeats", type=int, default=2, help="answers per caller and config")
    args = parser.parse_args()
    try:
        callers = [int(c) for c in args.callers.split(",")]
    except ValueError:
        parser.error(f"--callers must be whole numbers separated by commas, not {args.callers!r}")
    asyncio.run(measure(callers, args.stagger_s, args.tokens_per_s, args.repeats))


if __name__ == "__main__":
    main()
