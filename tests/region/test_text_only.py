"""Text-only turns (``TurnStart.output_audio`` false) on stand-in models (``region.testing``): the
answer streams as text and no synthesis is spent on it. The models are not under test here (the
stand-ins record whether they were called); a text-only turn on a real region is in
``tests/edge/test_text_only_live.py``."""

from __future__ import annotations

from typing import TypeVar

from region.pipeline import NaivePipeline
from region.testing import FixedTranscript, ScriptedLlm, ToneTts, run_frames, standin_node
from region.turn_state import Stages, Turn
from tests.region.helpers import SECOND, start
from wire.client import ClauseAudio
from wire.turn import AudioClause, RegionMessage, TextDelta, Transcript, TurnDone, TurnStart

T = TypeVar("T")

REPLY = "Sunny and warm today, with a light breeze. Take a hat if you go out."


def of(kind: type[T], sent: list[RegionMessage | bytes]) -> list[T]:
    return [m for m in sent if isinstance(m, kind)]


async def test_a_text_only_turn_streams_text_and_never_calls_tts() -> None:
    tts = ToneTts()
    node = standin_node(llm=ScriptedLlm(REPLY), tts=tts)
    sent = await run_frames(node, [start("t", text="Weather?", output_audio=False)], until=TurnDone)

    assert "".join(d.delta for d in of(TextDelta, sent)) == REPLY
    assert of(AudioClause, sent) == [] and not any(isinstance(m, bytes) for m in sent)
    assert tts.spoken == []
    done = of(TurnDone, sent)[0]
    assert done.status == "completed" and done.text == REPLY
    assert "tts_first_audio_s" not in done.timings and "first_audio_s" not in done.timings


async def test_a_spoken_turn_from_audio_can_be_answered_as_text() -> None:
    stt, tts = FixedTranscript("What is the weather?"), ToneTts()
    node = standin_node(stt=stt, llm=ScriptedLlm(REPLY), tts=tts)
    sent = await run_frames(
        node, [start("t", audio_bytes=len(SECOND), output_audio=False), SECOND], until=TurnDone
    )
    assert [t.text for t in of(Transcript, sent)] == ["What is the weather?"] and stt.calls == 1
    assert "".join(d.delta for d in of(TextDelta, sent)) == REPLY and tts.spoken == []


async def test_a_text_only_turn_needs_no_voice_the_synthesizer_knows() -> None:
    """No voice is spoken: an unknown one (refused for a spoken turn) does not refuse the turn."""
    node = standin_node(llm=ScriptedLlm("Fine."))
    sent = await run_frames(node, [start("t", text="Hi", voice="nobody", output_audio=False)], until=TurnDone)
    assert of(TurnDone, sent)[0].status == "completed"


async def test_a_text_only_failover_continues_after_the_text_already_shown() -> None:
    llm, tts = ScriptedLlm(REPLY), ToneTts()
    node = standin_node(llm=llm, tts=tts)
    shown = "Sunny and warm today,"
    sent = await run_frames(
        node,
        [start("t", transcript="Weather?", heard_text=shown, output_audio=False)],
        until=TurnDone,
    )
    assert "".join(d.delta for d in of(TextDelta, sent)) == REPLY[len(shown) :]
    assert tts.spoken == []


async def test_the_naive_pipeline_answers_text_only_turns_without_tts_too() -> None:
    tts = ToneTts()
    pipeline = NaivePipeline(Stages(stt=FixedTranscript(), llm=ScriptedLlm(REPLY), tts=tts))
    events = [ev async for ev in pipeline.run(Turn(TurnStart(turn_id="t", text="Hi", output_audio=False)))]
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == REPLY
    assert not any(isinstance(e, ClauseAudio) for e in events) and tts.spoken == []
