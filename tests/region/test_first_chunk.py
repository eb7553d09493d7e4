"""The region speaks an answer's first few words as its first clause, as its settings say
(``TtsSettings.first_chunk_words``, on in both profiles); later clauses grow by the profile's schedule
(``later_chunk_words``), then are whole sentences.

The chunker comes from ``build_stages`` (the real wiring); the models around it are stand-ins
(``region.testing``): what is under test is where the answer is cut, not how it sounds.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from region.backends import build_stages
from region.settings import RegionSettings
from region.streaming import StreamingPipeline
from region.testing import FixedTranscript, ScriptedLlm, ToneTts
from region.turn_state import Turn
from voicemesh.profiles import cpu_profile
from wire.client import ClauseAudio
from wire.turn import TurnStart

ANSWER = "Once upon a time there was a small cat named Whiskers. She liked fish and naps."


async def spoken_clauses(first_chunk_words: int, later: tuple[int, ...] = ()) -> list[str]:
    p = cpu_profile()
    tts_settings = replace(p.tts, first_chunk_words=first_chunk_words, later_chunk_words=later)
    settings = RegionSettings(region_id="r", stt=p.stt, llm=p.llm, tts=tts_settings)
    real = build_stages(settings, "http://127.0.0.1:9/v1")
    await real.llm.aclose()  # never used: the stand-in answers
    tts = ToneTts()
    stages = replace(real, stt=FixedTranscript(), llm=ScriptedLlm(ANSWER), tts=tts)
    turn = Turn(TurnStart(turn_id="t", text="Tell me a story."))
    clauses = [
        ev.clause.text async for ev in StreamingPipeline(stages).run(turn) if isinstance(ev, ClauseAudio)
    ]
    assert clauses == tts.spoken
    return clauses


@pytest.mark.parametrize(
    ("words", "first"),
    [(cpu_profile().tts.first_chunk_words, "Once upon a time"), (2, "Once upon"), (3, "Once upon a time")],
)
async def test_the_first_clause_is_a_few_words_then_whole_sentences(words: int, first: str) -> None:
    clauses = await spoken_clauses(words)
    assert clauses[0] == first  # 3 words would end on "a": the next word comes along
    assert clauses[1:] == [ANSWER[len(first) + 1 : ANSWER.index(" She")], "She liked fish and naps."]


async def test_off_the_first_clause_is_the_first_sentence() -> None:
    assert await spoken_clauses(0) == [
        "Once upon a time there was a small cat named Whiskers.",
        "She liked fish and naps.",
    ]


async def test_the_profiles_later_clauses_grow_then_are_whole_sentences() -> None:
    p = cpu_profile()
    assert p.tts.later_chunk_words  # on in the profile: what the chunker gets from build_stages
    clauses = await spoken_clauses(p.tts.first_chunk_words, p.tts.later_chunk_words)
    assert clauses == [
        "Once upon a time",
        "there was a small cat named",
        "Whiskers.",
        "She liked fish and naps.",
    ]
