"""Pipecat 1.14's stock ``OpenAIRealtimeLLMService`` against a real edge and region.

The service runs unmodified in a ``Pipeline`` under a ``PipelineWorker``; only ``base_url`` and
``api_key`` point it at the edge. Pipecat treats any server ``error`` (but two cancel races) as
fatal and stops reading the socket (``pipecat/services/openai/realtime/llm.py``
``_receive_task_handler``), so "no ``ErrorFrame`` and the next turn still answers" is the proof
that the session survived.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from edge.shared.voices import CPU_VOICES
from tests.fixtures.edge import RunningEdge

from .conftest import (
    LONG_ANSWER,
    QUESTION,
    SECOND_QUESTION,
    client_events,
    pipecat_errors,
    pipecat_run,
    pipecat_service,
)


def _session(**fields: Any) -> Any:
    from pipecat.services.openai.realtime import events

    return events.SessionProperties(**fields)


def _settings(**session_fields: Any) -> Any:
    from pipecat.services.openai.realtime.llm import OpenAIRealtimeLLMService

    return OpenAIRealtimeLLMService.Settings(session_properties=_session(**session_fields))


def _audio_bytes(frames: list[Any]) -> int:
    return sum(len(f.audio) for f in frames)


def _text(frames: list[Any]) -> str:
    return "".join(f.text for f in frames)


async def test_spoken_turn(edge: RunningEdge, question_pcm: Callable[[str], bytes]) -> None:
    async with pipecat_run(pipecat_service(edge.url, edge.api_key)) as run:
        await run.speak(question_pcm(QUESTION))
        await run.wait_for_frames("LLMFullResponseEndFrame")
        assert pipecat_errors(run) == []
        assert _audio_bytes(run.of_type("TTSAudioRawFrame")) > 0
        assert _text(run.of_type("TTSTextFrame")).strip()
        # The user's words come back upstream as a TranscriptionFrame (input transcription, which
        # may finish after the answer).
        await run.wait_for_frames("TranscriptionFrame")
        transcripts = [f.text for f in run.of_type("TranscriptionFrame")]
        assert transcripts and "capital" in transcripts[0].lower(), transcripts


async def test_barge_in_then_second_turn(edge: RunningEdge, question_pcm: Callable[[str], bytes]) -> None:
    """Speaking over the answer makes Pipecat send ``conversation.item.truncate``; the edge
    must answer ``conversation.item.truncated`` (not an ``error``), and the next turn answers."""
    truncates_before = client_events("conversation.item.truncate")
    async with pipecat_run(pipecat_service(edge.url, edge.api_key)) as run:
        await run.speak(question_pcm(LONG_ANSWER))
        await run.wait_for_frames("TTSAudioRawFrame")  # the answer is playing
        await run.speak(question_pcm(SECOND_QUESTION))  # barge in
        # The first response ends (cancelled), then the second one answers.
        await run.wait_for_frames("LLMFullResponseEndFrame", 2)
        assert pipecat_errors(run) == []
        starts = run.of_type("TTSStartedFrame")
        assert len(starts) >= 2, "the second turn produced no audio"
        second = run.frames.items[run.frames.items.index(starts[-1]) :]
        assert _audio_bytes([f for f in second if type(f).__name__ == "TTSAudioRawFrame"]) > 0
    # Pipecat did truncate the item it was playing, and the edge took it (no error outcome).
    after = client_events("conversation.item.truncate")
    assert after.get("ok", 0) > truncates_before.get("ok", 0), after
    assert {k: v for k, v in after.items() if k != "ok"} == {
        k: v for k, v in truncates_before.items() if k != "ok"
    }, after


async def test_greeting(edge: RunningEdge) -> None:
    """A Pipecat app's opening: the service's ``system_instruction`` and an empty context, run at
    once (what ``LLMRunFrame`` through the context aggregator does): a response with no user input."""
    from pipecat.frames.frames import LLMContextFrame
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.services.openai.realtime.llm import OpenAIRealtimeLLMService

    settings = OpenAIRealtimeLLMService.Settings(system_instruction="Greet the user in one short sentence.")
    async with pipecat_run(pipecat_service(edge.url, edge.api_key, settings=settings)) as run:
        await run.send(LLMContextFrame(context=LLMContext()))
        await run.wait_for_frames("LLMFullResponseEndFrame")
        assert pipecat_errors(run) == []
        assert _audio_bytes(run.of_type("TTSAudioRawFrame")) > 0
        assert _text(run.of_type("TTSTextFrame")).strip()


async def test_text_only_turn(edge: RunningEdge, question_pcm: Callable[[str], bytes]) -> None:
    """``output_modalities: ["text"]``: the answer comes as ``response.output_text.delta``
    (Pipecat's ``LLMTextFrame``s) and no audio is produced."""
    service = pipecat_service(edge.url, edge.api_key, settings=_settings(output_modalities=["text"]))
    async with pipecat_run(service) as run:
        await run.speak(question_pcm(QUESTION))
        await run.wait_for_frames("LLMFullResponseEndFrame")
        assert pipecat_errors(run) == []
        assert _text(run.of_type("LLMTextFrame")).strip()
        assert run.of_type("TTSAudioRawFrame") == []


def _median_pitch_hz(frames: list[Any]) -> float:
    """The median fundamental frequency of the voiced 40 ms frames of ``frames``' audio
    (autocorrelation over 70-400 Hz): about 90 Hz for Kokoro's male voice, 220-320 Hz for its
    female ones."""
    rate = frames[0].sample_rate
    x = np.frombuffer(b"".join(f.audio for f in frames), dtype="<i2").astype(np.float32) / 32768.0
    size, lo, hi = int(0.04 * rate), rate // 400, rate // 70
    pitches = []
    for start in range(0, len(x) - size, size // 2):
        w = x[start : start + size] - x[start : start + size].mean()
        if np.sqrt(np.mean(w**2)) < 0.02:
            continue  # a pause
        ac = np.correlate(w, w, "full")[size - 1 :]
        lag = lo + int(np.argmax(ac[lo:hi]))
        if ac[lag] > 0.5 * ac[0]:  # voiced: periodic enough to have a pitch
            pitches.append(rate / lag)
    assert len(pitches) >= 10, f"only {len(pitches)} voiced frames in {len(x) / rate:.1f} s of audio"
    return float(np.median(pitches))


async def test_openai_voice_name(edge: RunningEdge, question_pcm: Callable[[str], bytes]) -> None:
    """The voice Pipecat asks for is the voice heard: ``alloy`` and ``echo`` map to a female and the
    male Kokoro voice (``CPU_VOICES``), heard as a pitch over 180 Hz and one under 140 Hz; were the
    name ignored, both answers would be in the region's one default voice."""
    from pipecat.services.openai.realtime import events

    assert (CPU_VOICES.aliases["alloy"], CPU_VOICES.aliases["echo"]) == ("jf_alpha", "jm_kumo")
    pitch: dict[str, float] = {}
    for voice in ("alloy", "echo"):
        audio = events.AudioConfiguration(output=events.AudioOutput(voice=voice))
        service = pipecat_service(edge.url, edge.api_key, settings=_settings(audio=audio))
        async with pipecat_run(service) as run:
            await run.speak(question_pcm(QUESTION))
            await run.wait_for_frames("LLMFullResponseEndFrame")
            assert pipecat_errors(run) == []
            assert _text(run.of_type("TTSTextFrame")).strip()
            pitch[voice] = _median_pitch_hz(run.of_type("TTSAudioRawFrame"))
    assert pitch["alloy"] > 180.0 and pitch["echo"] < 140.0, pitch
