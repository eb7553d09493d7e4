"""The end-of-turn probability on the real vLLM (SmolLM2-135M, the cpu profile's): a sentence cut at a
thinking pause scores low, the whole sentence high; and a real region sends it on the ``transcript``
of a turn that asks for it, only then."""

from __future__ import annotations

import pytest

from region.end_of_turn import VllmEndOfTurn
from region.llm import VllmClient
from region.settings import RegionSettings
from tests.fixtures.region import RunningRegion
from voicemesh.profiles import cpu_profile
from wire.client import RegionConnection
from wire.turn import Transcript, TurnStart

CUT_AND_WHOLE = [
    ("I would like to book a table for", "I would like to book a table for four people at eight tonight."),
    ("My flight number is", "My flight number is B A four seven two, and I need to change it."),
]


@pytest.mark.parametrize(("cut", "whole"), CUT_AND_WHOLE)
async def test_a_cut_sentence_goes_on_and_the_whole_one_ends(llm_url: str, cut: str, whole: str) -> None:
    from edge.realtime.semantic_turns import WORDS_END, WORDS_GO_ON

    llm = VllmClient(cpu_profile().llm, llm_url, system_prompt=RegionSettings.system_prompt)  # the region's
    model = VllmEndOfTurn(llm)
    start = TurnStart(turn_id="t", end_of_turn=True)
    try:
        p_cut = await model.probability(start, cut)
        p_cut_punctuated = await model.probability(start, cut + ".")  # Whisper may end a half so
        p_whole = await model.probability(start, whole)
    finally:
        await llm.aclose()
    assert p_cut is not None and p_cut_punctuated is not None and p_whole is not None
    assert p_cut == p_cut_punctuated < WORDS_GO_ON, (p_cut, p_cut_punctuated)
    assert p_whole >= WORDS_END, p_whole


async def _transcript(region: RunningRegion, asks: bool) -> Transcript:
    conn = await RegionConnection.open(region.url, region=region.id)
    start = TurnStart(
        turn_id=f"eot-{asks}", text="What is the capital of France?", end_of_turn=asks,
        max_output_tokens=5, output_audio=False, temperature=0.0,
    )  # fmt: skip
    transcript = None
    try:
        await conn.start(start)
        async for ev in conn.events():
            if isinstance(ev, Transcript):
                transcript = ev
    finally:
        await conn.close()
    assert transcript is not None
    return transcript


async def test_a_region_sends_it_on_the_transcript_only_when_asked(region: RunningRegion) -> None:
    asked = await _transcript(region, asks=True)
    assert asked.end_of_turn is not None and asked.end_of_turn >= 0.5, asked  # a whole question
    assert (await _transcript(region, asks=False)).end_of_turn is None
