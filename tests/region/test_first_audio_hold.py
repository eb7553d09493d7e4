"""An answer's first audio waits (up to ``Stages.first_audio_hold_s``) for its next clause when that
clause is expected to take longer to synthesise than the first plays: the caller hears the two
without a silence between them. Without a hold (0), the first audio goes out at once.

The region's real ``StreamingPipeline`` and playout clock; the LLM, TTS and measured rate are
stand-ins (``region.testing``; the rate fixed as in ``test_clause_schedule``): what is under test is
when the first audio is sent, and the test holds the second clause's synthesis to see it, so nothing
is timed.
"""

from __future__ import annotations

import asyncio

from region.cpu_order import CpuOrder
from region.streaming import StreamingPipeline
from region.testing import FixedTranscript, Hold, ScriptedLlm
from region.turn_state import Stages, Turn
from tests.region.helpers import SlowKokoro, TimedTts
from wire.client import ClauseAudio
from wire.turn import TurnStart


async def _first_audio_before_second_clause(hold_s: float) -> bool:
    """Whether the first clause's audio is out while the second clause is still being synthesised."""
    tts = TimedTts(0.05)  # 50 ms of audio: the next clause (1 s expected) cannot keep up with it
    second = tts.holds["Take a hat."] = Hold()
    stages = Stages(
        stt=FixedTranscript(), llm=ScriptedLlm("Sunny and warm. Take a hat."), tts=tts,
        order=CpuOrder(1), synth_rate=SlowKokoro(), first_audio_hold_s=hold_s,
    )  # fmt: skip
    events = StreamingPipeline(stages).run(Turn(TurnStart(turn_id="t", text="Weather?")))
    first = asyncio.ensure_future(anext(e async for e in events if isinstance(e, ClauseAudio)))
    await second.reached.wait()
    # Let everything that can run, run (the pipeline's tasks hand the clause on within a few steps).
    for _ in range(50):
        await asyncio.sleep(0)
    out_early = first.done()
    second.release()
    assert (await first).clause.text == "Sunny and warm."
    await events.aclose()
    return out_early


async def test_the_first_audio_waits_for_a_next_clause_that_would_leave_a_gap() -> None:
    assert not await _first_audio_before_second_clause(hold_s=3600.0)


async def test_without_a_hold_the_first_audio_goes_at_once() -> None:
    assert await _first_audio_before_second_clause(hold_s=0.0)
