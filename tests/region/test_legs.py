"""Decoding held while the first clause is synthesised (``region.legs``, ``first_leg_tokens``): the
answer is asked for in two legs, the second only once the first clause's audio is ready, and what
the caller gets is the same answer, counted once.

The LLM and TTS are stand-ins (``region.testing``): a token per word or punctuation mark, cut and
continued as ``VllmClient`` does (vLLM's side of both: ``test_llm_legs.py``), and a voice that
waits for the test's ``Hold``. What is under test is when the second leg is asked for and what it
continues from, not the models (the live e2e bench measures what the hold buys).
"""

from __future__ import annotations

import asyncio

import pytest

from region.legs import in_legs
from region.streaming import StreamingPipeline
from region.testing import TOKEN, FixedTranscript, Hold, ScriptedLlm, ToneTts
from region.turn_state import Stages, Turn
from wire.client import ClauseAudio
from wire.text import ClauseChunker
from wire.turn import TextDelta, TokenUsage, Tool, TurnStart

ANSWER = "Sure, to boil an egg, put it in boiling water for eight minutes. Then cool it in cold water."


def stages(llm: ScriptedLlm, tts: ToneTts, cap: int) -> Stages:
    return Stages(
        stt=FixedTranscript(),
        llm=llm,
        tts=tts,
        chunker=lambda: ClauseChunker(first_words=4),
        first_leg_tokens=cap,
    )


async def answer(pipeline: StreamingPipeline, turn: Turn) -> tuple[str, list[str]]:
    text, clauses = "", []
    async for event in pipeline.run(turn):
        if isinstance(event, TextDelta):
            text += event.delta
        elif isinstance(event, ClauseAudio):
            clauses.append(event.clause.text)
    return text, clauses


async def test_the_second_leg_starts_once_the_first_clause_is_spoken_and_continues_its_words() -> None:
    llm, hold = ScriptedLlm(ANSWER, counts_tokens=True), Hold()
    tts = ToneTts(hold=hold)
    turn = Turn(TurnStart(turn_id="t", text="How do I boil an egg?", max_output_tokens=100))
    # Eight tokens: "Sure, to boil an egg," is a clause once " put" shows the space after it.
    run = asyncio.create_task(answer(StreamingPipeline(stages(llm, tts, cap=8)), turn))
    await hold.reached.wait()  # the first clause is being synthesised
    assert llm.open_streams == 0  # after the first leg's last token: nothing decodes beside it
    for _ in range(50):
        await asyncio.sleep(0)  # every other task may run: none asks for the rest
    # The first leg asked for the whole answer (vLLM checks the turn's max tokens then), and was
    # stopped before the word that started after eight tokens.
    assert [s.max_output_tokens for s, _ in llm.requests] == [100]
    assert llm.stopped_after == [8]
    hold.release()
    text, clauses = await asyncio.wait_for(run, 30)

    _, rest = (s for s, _ in llm.requests)
    assert rest.heard_text == "Sure, to boil an egg, put"  # the first leg's eight tokens, as written
    assert rest.max_output_tokens == 100 - 8
    assert llm.stopped_after == [8, 0]  # the second leg runs to the end
    assert text == ANSWER  # one answer: no word twice, none lost, no space lost or doubled
    assert clauses[0] == "Sure, to boil an egg," and " ".join(clauses) == ANSWER
    # The first leg's input; the word it stopped before is counted once, by the second leg.
    assert turn.usage == TokenUsage(input_tokens=6, output_tokens=len(TOKEN.findall(ANSWER)))
    assert "llm_held_s" in turn.timings


async def test_an_answer_that_ends_in_the_first_leg_is_asked_for_once() -> None:
    llm = ScriptedLlm("Yes, of course.", counts_tokens=True)
    turn = Turn(TurnStart(turn_id="t", text="Can you hear me?"))
    text, _ = await answer(StreamingPipeline(stages(llm, ToneTts(), cap=6)), turn)
    assert text == "Yes, of course." and len(llm.requests) == 1
    assert "llm_held_s" not in turn.timings


async def test_an_answer_that_runs_past_the_first_leg_and_ends_by_itself_is_asked_for_once() -> None:
    # Four tokens, then "." (no word starts after it): the stream ends before a cut could.
    llm = ScriptedLlm("Yes, of course.", counts_tokens=True)
    turn = Turn(TurnStart(turn_id="t", text="Can you hear me?"))
    text, _ = await answer(StreamingPipeline(stages(llm, ToneTts(), cap=4)), turn)
    assert text == "Yes, of course." and len(llm.requests) == 1
    assert turn.usage is not None and turn.usage.output_tokens == 5  # past the cap: counted whole


async def legs(llm: ScriptedLlm, cap: int) -> str:
    """The text of ``in_legs``, ready for the second leg at once."""
    start = TurnStart(turn_id="t", text="Tell me about the Moon.", max_output_tokens=100)

    async def ready() -> None:
        pass

    return "".join([p async for p in in_legs(llm, start, start.text, cap, ready) if isinstance(p, str)])


MOON = "The Moon's far side isn't dark (it gets as much sun as ours) - and it's cold: about -170 degrees."


@pytest.mark.parametrize("reply", [ANSWER, MOON])
async def test_two_legs_join_as_the_answer_in_one_whatever_the_cut(reply: str) -> None:
    for cap in range(1, len(TOKEN.findall(reply))):  # at a word's end, before punctuation, ...
        llm = ScriptedLlm(reply, counts_tokens=True)
        assert await legs(llm, cap) == reply, cap
        heard = llm.requests[-1][0].heard_text  # the first leg's text, continued by the second
        assert len(llm.requests) == 1 or (heard and not heard[-1].isspace()), (cap, heard)


async def test_the_first_leg_ends_at_a_word_end_and_carries_the_punctuation_after_it() -> None:
    for cap, heard in ((6, "Sure, to boil an egg,"), (8, "Sure, to boil an egg, put")):
        llm = ScriptedLlm(ANSWER, counts_tokens=True)
        assert await legs(llm, cap) == ANSWER
        assert [s.heard_text for s, _ in llm.requests] == ["", heard]


async def test_no_clause_closed_in_the_first_leg_means_no_hold() -> None:
    # Two tokens are not yet four words: nothing waits for TTS, the second leg follows at once.
    llm = ScriptedLlm(ANSWER, counts_tokens=True)
    turn = Turn(TurnStart(turn_id="t", text="How do I boil an egg?"))
    text, _ = await answer(StreamingPipeline(stages(llm, ToneTts(), cap=2)), turn)
    assert text == ANSWER and len(llm.requests) == 2
    assert "llm_held_s" not in turn.timings


async def test_tools_text_only_and_short_caps_are_one_request() -> None:
    tool = Tool(name="weather", description="The weather", parameters={"type": "object"})
    for start in (
        TurnStart(turn_id="t", text="Weather?", tools=[tool]),  # a call's arguments are not split
        TurnStart(turn_id="t", text="Hi", output_audio=False),  # no audio: nothing to hold for
        TurnStart(turn_id="t", text="Hi", max_output_tokens=6),  # the first leg is the whole answer
    ):
        llm = ScriptedLlm(ANSWER, counts_tokens=True)
        await answer(StreamingPipeline(stages(llm, ToneTts(), cap=6)), Turn(start))
        assert len(llm.requests) == 1, start


async def test_a_turn_cancelled_during_the_hold_asks_for_nothing_more() -> None:
    llm, hold = ScriptedLlm(ANSWER, counts_tokens=True), Hold()
    turn = Turn(TurnStart(turn_id="t", text="How do I boil an egg?"))
    run = asyncio.create_task(answer(StreamingPipeline(stages(llm, ToneTts(hold=hold), cap=8)), turn))
    await hold.reached.wait()
    run.cancel()
    try:
        await run
    except asyncio.CancelledError:
        pass
    assert len(llm.requests) == 1 and llm.open_streams == 0
