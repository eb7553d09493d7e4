"""Under load, a later clause whose caller is about to run out of audio is synthesised before
another turn's first clause; a caller with plenty of audio left lets the first clause go first.

The region's real ``StreamingPipeline``, ``CpuOrder`` (one slot: the cores are taken), chunker and
playout clock; the LLM and TTS are stand-ins (``region.testing``), because what is under test is the
order of the runs, not the words or the voice: with Kokoro the order would depend on this machine's
speed. Each clause's audio is as long as the test says, and the test holds runs (``Hold``) to put the
turns in the state it needs, so nothing is timed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from region.cpu_order import CpuOrder
from region.streaming import StreamingPipeline
from region.testing import FixedTranscript, Hold
from region.turn_state import Stages, Turn
from tests.region.helpers import SlowKokoro, TimedTts
from wire.client import ClauseAudio
from wire.turn import TokenUsage, ToolCall, TurnStart

REPLIES = {"A": ["Alpha one. ", "Alpha two."], "B": ["Bravo one."], "C": ["Charlie one."]}


class TwoPartLlm:
    """Each turn's reply (``REPLIES`` by turn id); A's second part waits for ``a_rest``."""

    ready = True
    url = "memory://two-part"

    def __init__(self) -> None:
        self.a_rest = Hold()

    async def load(self) -> None:
        pass

    async def stream(
        self, start: TurnStart, user_text: str, *, stop_after: int = 0
    ) -> AsyncIterator[str | ToolCall | TokenUsage]:
        for i, part in enumerate(REPLIES[start.turn_id]):
            if i == 1:
                await self.a_rest.wait()
            yield part

    async def aclose(self) -> None:
        pass


async def _answer(pipeline: StreamingPipeline, turn_id: str) -> list[str]:
    turn = Turn(TurnStart(turn_id=turn_id, text="Go on."))
    return [e.clause.text async for e in pipeline.run(turn) if isinstance(e, ClauseAudio)]


async def _order_of_runs(audio_s: float) -> list[str]:
    """A has spoken its first clause (``audio_s`` long) while C's first clause holds the only slot
    and B's waits; then A's second clause comes: which of A's second and B's first runs next?"""
    llm, tts = TwoPartLlm(), TimedTts(audio_s)
    pipeline = StreamingPipeline(
        Stages(stt=FixedTranscript(), llm=llm, tts=tts, order=CpuOrder(1), synth_rate=SlowKokoro())
    )
    a = asyncio.create_task(_answer(pipeline, "A"))
    await llm.a_rest.reached.wait()  # A's first clause is spoken (before its LLM asks for more)
    while tts.asked != ["Alpha one."]:  # noqa: ASYNC110 - a stand-in's list has no event
        await asyncio.sleep(0)
    c = asyncio.create_task(_answer(pipeline, "C"))
    await tts.holds["Charlie one."].reached.wait()
    b = asyncio.create_task(_answer(pipeline, "B"))
    llm.a_rest.release()
    while pipeline.stages.order.waiting < 2:  # noqa: ASYNC110 - B's first clause and A's second queued
        await asyncio.sleep(0)
    tts.holds["Charlie one."].release()
    assert list(await asyncio.gather(a, b, c)) == [
        ["Alpha one.", "Alpha two."],
        ["Bravo one."],
        ["Charlie one."],
    ]
    return tts.asked


async def test_a_caller_about_to_run_dry_gets_its_next_clause_before_another_first_clause() -> None:
    # A's first clause is 50 ms of audio: played long before its next clause (1 s) could be made.
    assert await _order_of_runs(0.05) == ["Alpha one.", "Charlie one.", "Alpha two.", "Bravo one."]


async def test_a_caller_with_audio_to_spare_lets_another_first_clause_go_first() -> None:
    # An hour of audio still to play: B's caller, waiting for a first word, goes first.
    assert await _order_of_runs(3600.0) == ["Alpha one.", "Charlie one.", "Bravo one.", "Alpha two."]
