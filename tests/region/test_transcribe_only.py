"""Transcribe-only turns (``TurnStart.transcribe_only``) on stand-in models (``region.testing``): STT
alone, then ``turn.done``; no LLM and no TTS are called. The stand-ins record their calls; a real
transcription through an edge is in ``tests/edge/test_transcription_live.py``."""

from __future__ import annotations

from typing import TypeVar

from region.pipeline import NaivePipeline
from region.testing import FixedTranscript, ScriptedLlm, ToneTts, run_frames, standin_node
from region.turn_state import Stages, Turn
from tests.region.helpers import SECOND, start
from wire.audio import pcm16_to_float
from wire.turn import RegionMessage, TextDelta, Transcript, TurnAdmitted, TurnDone, TurnError, TurnStart

T = TypeVar("T")


def of(kind: type[T], sent: list[RegionMessage | bytes]) -> list[T]:
    return [m for m in sent if isinstance(m, kind)]


async def test_a_transcribe_only_turn_runs_stt_and_nothing_else() -> None:
    stt, llm, tts = FixedTranscript("book a table for two"), ScriptedLlm(), ToneTts()
    node = standin_node(stt=stt, llm=llm, tts=tts)
    frames: list[str | bytes] = [
        start("t", audio_bytes=len(SECOND), transcribe_only=True, output_audio=False),
        SECOND,
    ]
    sent = await run_frames(node, frames, until=TurnDone)

    assert [type(m) for m in sent] == [TurnAdmitted, Transcript, TurnDone]
    assert of(Transcript, sent)[0].text == "book a table for two" and stt.calls == 1
    assert llm.requests == [] and tts.spoken == []
    done = of(TurnDone, sent)[0]
    assert done.status == "completed" and done.transcript == "book a table for two" and done.text == ""
    assert "stt_s" in done.timings
    assert stt.asked == [("", "", True)]  # the region's language, no prompt, timed segments


async def test_the_turns_language_prompt_and_timestamps_go_to_whisper() -> None:
    stt = FixedTranscript("mm-hm")
    frames: list[str | bytes] = [
        start(
            "t", audio_bytes=len(SECOND), transcribe_only=True, output_audio=False, language="de",
            prompt="Mm-hm. Yeah.", timestamps=False,
        ),
        SECOND,
    ]  # fmt: skip
    sent = await run_frames(standin_node(stt=stt), frames, until=TurnDone)
    assert stt.asked == [("de", "Mm-hm. Yeah.", False)]
    assert of(Transcript, sent)[0].text == "mm-hm"


async def test_a_transcribe_only_turn_after_a_failover_echoes_the_transcript_it_carries() -> None:
    """A region failing after its transcript: the next one gets the words, not the audio."""
    stt, llm = FixedTranscript(), ScriptedLlm()
    node = standin_node(stt=stt, llm=llm)
    sent = await run_frames(node, [start("t", transcript="hello", transcribe_only=True)], until=TurnDone)
    assert [t.text for t in of(Transcript, sent)] == ["hello"] and stt.calls == 0 and llm.requests == []


async def test_a_transcribe_only_turn_without_audio_is_refused() -> None:
    node = standin_node()
    sent = await run_frames(node, [start("t", text="", transcribe_only=True)], until=TurnError)
    assert of(TurnError, sent)[0].code == "invalid_audio" and of(TurnError, sent)[0].turn_id == "t"


async def test_the_naive_pipeline_only_transcribes_too() -> None:
    llm = ScriptedLlm()
    pipeline = NaivePipeline(Stages(stt=FixedTranscript("hi"), llm=llm, tts=ToneTts()))
    start_ = TurnStart(turn_id="t", audio_bytes=len(SECOND), transcribe_only=True)
    events = [ev async for ev in pipeline.run(Turn(start_, audio=pcm16_to_float(SECOND)))]
    assert [type(e) for e in events] == [Transcript] and llm.requests == []
    assert not any(isinstance(e, TextDelta) for e in events)
