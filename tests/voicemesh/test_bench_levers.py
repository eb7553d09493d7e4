"""``voicemesh bench region --lever``: the lever really differs between the states it alternates,
and a lever that cannot be toggled is refused with a reason.

The models are stand-ins (``region.testing``): what is under test is the bench's toggling and
bookkeeping, not the timings (the bench measures those on the real models).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from region.testing import ScriptedLlm, standin_node
from voicemesh.bench.region_levers import lever_summary, measure_lever
from wire.errors import VoicemeshError
from wire.turn import TurnStart

ANSWER = "One day, a cat named Luna wandered into the backyard of a small town. She liked it."


async def test_first_chunk_alternates_a_short_and_a_whole_first_clause() -> None:
    node = standin_node(llm=ScriptedLlm(ANSWER))
    lines: list[str] = []
    samples = await measure_lever(
        "first-chunk", node, TurnStart(turn_id="t", text="A story?"), np.zeros(0, dtype=np.float32),
        rounds=2, concurrency=2, stop=asyncio.Event(), report=lines.append,
    )  # fmt: skip
    assert [s.on for s in samples] == [True, True, False, False, False, False, True, True]
    assert {s.first_chunk for s in samples if s.on} == {"One day, a cat"}
    assert {s.first_chunk for s in samples if not s.on} == {ANSWER[: ANSWER.index(" She")]}
    assert all({"first_audio_s", "stall_after_first_s"} <= s.figures.keys() for s in samples)
    assert len(lines) == 4
    summary = "\n".join(lever_summary(samples))
    assert "first-chunk, 2 concurrent turn(s), 4 turns each" in summary and "first_audio_s" in summary
    assert node.stages.chunker().first_words == 0  # the node's own chunker is left as it was


async def test_priority_needs_a_vllm_on_this_machine() -> None:
    node = standin_node()  # its LLM is in memory: no process to renice
    with pytest.raises(VoicemeshError, match="needs the vLLM on this machine"):
        await measure_lever(
            "priority", node, TurnStart(turn_id="t", text="Hi"), np.zeros(0, dtype=np.float32),
            rounds=1, concurrency=1, stop=asyncio.Event(), report=print,
        )  # fmt: skip
