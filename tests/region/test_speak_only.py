"""Speak-only turns (``TurnStart.speak_text``, ``POST /v1/audio/speech``) on stand-in models
(``region.testing``: the voice is not under test, which clauses are spoken is): the text is cut into
clauses and each is synthesised in order, with no STT and no LLM; after a failover the clauses in
``heard_text`` are skipped, so a continuing region never repeats one. The same through a real edge,
regions and a SIGKILL is ``tests/edge/test_speech_failover_live.py``."""

from __future__ import annotations

from region.pipeline import NaivePipeline
from region.streaming import StreamingPipeline
from region.testing import FixedTranscript, ScriptedLlm, ToneTts, run_frames, standin_node
from region.turn_state import Stages, Turn
from tests.region.helpers import start
from wire.client import ClauseAudio
from wire.text import split_clauses, unheard_clauses
from wire.turn import AudioClause, TextDelta, TurnDone, TurnError, TurnStart

TEXT = "The first sentence is here. The second one follows it. And the third ends it."


async def test_a_speak_only_turn_synthesises_each_clause_and_calls_no_other_model() -> None:
    stt, llm, tts = FixedTranscript(), ScriptedLlm(), ToneTts()
    node = standin_node(stt=stt, llm=llm, tts=tts)
    sent = await run_frames(node, [start("t", speak_text=TEXT, speed=1.5)], until=TurnDone)

    assert tts.spoken == split_clauses(TEXT) and len(tts.spoken) == 3
    assert [m.text for m in sent if isinstance(m, AudioClause)] == tts.spoken
    assert sum(isinstance(m, bytes) for m in sent) == 3  # one audio frame per clause
    (delta,) = [m for m in sent if isinstance(m, TextDelta)]
    assert delta.delta == " ".join(tts.spoken)  # what the router keeps as not yet voiced
    assert stt.calls == 0 and llm.requests == []
    done = next(m for m in sent if isinstance(m, TurnDone))
    assert done.status == "completed" and done.text == delta.delta


async def test_a_continuing_region_skips_the_clauses_already_heard() -> None:
    clauses = split_clauses(TEXT)
    for pipeline_cls in (StreamingPipeline, NaivePipeline):
        tts = ToneTts()
        pipeline = pipeline_cls(Stages(stt=FixedTranscript(), llm=ScriptedLlm(), tts=tts))
        # The router joins heard clauses with single spaces; a region may trim them: compared sans spaces.
        heard = "  ".join(clauses[:1]) + " "
        turn = Turn(TurnStart(turn_id="t", speak_text=TEXT, heard_text=heard))
        events = [ev async for ev in pipeline.run(turn)]
        spoken = [ev.clause.text for ev in events if isinstance(ev, ClauseAudio)]
        assert spoken == clauses[1:] == tts.spoken, pipeline_cls.__name__


async def test_a_speak_only_turn_whose_text_was_all_heard_says_nothing() -> None:
    tts = ToneTts()
    node = standin_node(tts=tts)
    sent = await run_frames(node, [start("t", speak_text=TEXT, heard_text=TEXT)], until=TurnDone)
    assert tts.spoken == [] and not any(isinstance(m, AudioClause | TextDelta) for m in sent)


def test_unheard_clauses_stops_at_the_first_clause_not_heard_in_full() -> None:
    clauses = ["One, two,", "three four.", "Five."]
    assert unheard_clauses(clauses, "") == clauses
    assert unheard_clauses(clauses, "One,  two, three four.") == ["Five."]
    assert unheard_clauses(clauses, "One, two, three") == ["three four.", "Five."]  # half a clause: again
    assert unheard_clauses(clauses, "One, two, three four. Five.") == []
    assert unheard_clauses(clauses, "Something else.") == clauses


async def test_bad_speak_only_turns_are_refused_before_any_work() -> None:
    tts = ToneTts()
    node = standin_node(tts=tts)
    for bad, code in (
        (start("t", speak_text="   "), "invalid_event"),
        (start("t", speak_text="Hi.", speed=9.0), "invalid_event"),
        (start("t", speak_text="x" * 100_000), "text_too_long"),
        (start("t", speak_text="Hi.", voice="no-such-voice"), "unknown_voice"),
    ):
        sent = await run_frames(node, [bad], until=TurnError)
        (error,) = [m for m in sent if isinstance(m, TurnError)]
        assert error.code == code and error.turn_id == "t", error
    assert tts.spoken == []
