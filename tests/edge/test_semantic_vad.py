"""``semantic_vad`` (``edge/realtime/semantic_turns.py``): a thinking pause inside a sentence does not
end the turn, the end of the sentence does, at once; ``server_vad`` keeps its silence window.

Real sessions and frames through ``SessionHarness``, the real Silero VAD and the real Smart Turn
v3.2 model on espeak-ng speech; the router is scripted (its regions are not what is under test).

The speech is espeak-ng's ``en`` voice with the pause written into one utterance (SSML
``<break/>``), so the words before it keep the intonation of a sentence going on. Smart Turn hears
prosody more than words, and on synthetic speech it is fragile: each half spoken as a sentence of
its own (falling at its end) is scored complete (0.7-0.98 on these sentences), and so are the cut
halves in espeak's ``en-us`` voice, and at the edge (the VAD's cut, its 192 ms pause) the cut halves
in ``en`` score 0.72 and 0.63 too: the thinking-pause tests are strict xfails that record it. What
the model said is asserted, not only the turns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from prometheus_client import REGISTRY

from edge.audio.turn_model import TurnModelBatcher, turn_features
from edge.audio.vad import VadBatcher
from edge.shared.settings import EdgeSettings
from edge.testing import ScriptedRouter, SessionHarness, memory_services, silence, spoken_reply
from tests.fixtures.common import SpeechFactory
from wire.audio import read_wav

SENTENCES = [
    ("I would like to book a table for", "four people at eight tonight."),
    ("My flight number is", "B A four seven two, and I need to change it."),
]


class Recorded:
    """The real batched model, with what it answered kept for the test to assert."""

    def __init__(self, model: TurnModelBatcher) -> None:
        self.model = model
        self.answers: list[float] = []

    async def complete(self, pcm16k: bytes) -> float:
        p = await self.model.complete(pcm16k)
        self.answers.append(p)
        return p

    async def aclose(self) -> None:
        await self.model.aclose()


def _ends(by: str) -> float:
    return REGISTRY.get_sample_value("voicemesh_edge_semantic_turn_ends_total", {"by": by}) or 0.0


def _pcm24k(path: Path) -> bytes:
    samples, rate = read_wav(path)
    assert rate == 24_000
    return (np.clip(samples, -1, 1) * 32767).astype(np.int16).tobytes()


def _paused(speech: SpeechFactory, first: str, rest: str) -> bytes:
    ssml = f"<speak>{first} <break time='800ms'/> {rest}</speak>"
    return _pcm24k(speech(ssml, rate=24_000, voice="en", ssml=True))


async def _turns(
    models: dict[str, Path], audio: bytes, **turn_detection: object
) -> tuple[SessionHarness, Recorded]:
    """One session hearing ``audio`` then 5 s of silence (past any eagerness timeout but low's)."""
    vad = VadBatcher(str(models["silero-vad"] / "silero_vad.onnx"))
    recorded = Recorded(TurnModelBatcher(str(models["smart-turn"] / "smart-turn-v3.2-cpu.onnx")))
    services = memory_services(
        ScriptedRouter(spoken_reply("Sure.")), vad=vad, turn_model=recorded,
        settings=EdgeSettings(api_keys=("test-key",)),
    )  # fmt: skip
    try:
        async with SessionHarness(services) as h:
            await h.turn_detection(**turn_detection)
            await h.append_audio(audio + silence(5.0))
            n = len(h.of_type("input_audio_buffer.committed"))
            await h.wait_for("response.done", n)
    finally:
        await services.aclose()
    return h, recorded


@pytest.mark.xfail(
    strict=True,
    reason="Smart Turn v3.2 scores espeak's words before the pause complete at the edge (0.72 and 0.63;"
    " the flight sentence's end 0.20): the model hears synthetic prosody, not the words",
)
@pytest.mark.parametrize(("first", "rest"), SENTENCES)
async def test_a_thinking_pause_is_one_turn_under_semantic_vad(
    models: dict[str, Path], speech: SpeechFactory, first: str, rest: str
) -> None:
    by_model = _ends("model")
    h, recorded = await _turns(models, _paused(speech, first, rest), type="semantic_vad", eagerness="medium")
    updated = h.of_type("session.updated")[-1]["session"]["audio"]["input"]["turn_detection"]
    assert updated == {
        "type": "semantic_vad", "eagerness": "medium", "create_response": True, "interrupt_response": True,
    }  # fmt: skip
    assert len(h.of_type("input_audio_buffer.committed")) == 1, recorded.answers
    assert len(h.of_type("response.created")) == 1
    # Asked at the thinking pause ("not complete") and at the end of the sentence ("complete").
    assert recorded.answers[0] < 0.5 < recorded.answers[-1], recorded.answers
    assert _ends("model") == by_model + 1  # the end of the sentence, not the 4 s timeout


@pytest.mark.parametrize(("first", "rest"), SENTENCES)
async def test_the_same_pause_is_two_turns_under_server_vad(
    models: dict[str, Path], speech: SpeechFactory, first: str, rest: str
) -> None:
    h, recorded = await _turns(
        models, _paused(speech, first, rest), type="server_vad", silence_duration_ms=500
    )
    assert len(h.of_type("input_audio_buffer.committed")) == 2
    assert len(h.of_type("response.created")) == 2
    assert recorded.answers == []  # the model is never asked
    assert (
        h.of_type("session.updated")[-1]["session"]["audio"]["input"]["turn_detection"]["type"]
        == "server_vad"
    )


async def test_a_complete_sentence_is_ended_by_the_model(
    models: dict[str, Path], speech: SpeechFactory
) -> None:
    by_model, by_timeout = _ends("model"), _ends("timeout")
    audio = _pcm24k(speech("What is the capital of France?", rate=24_000, voice="en"))
    h, recorded = await _turns(models, audio, type="semantic_vad", eagerness="low")
    assert len(h.of_type("response.created")) == 1
    assert len(recorded.answers) == 1 and recorded.answers[0] > 0.5, recorded.answers
    assert (_ends("model"), _ends("timeout")) == (by_model + 1, by_timeout)
    assert h.session.turns.semantic.ended_by == "model"


def test_features_match_pipecats(speech: SpeechFactory) -> None:
    from pipecat.audio.turn.smart_turn._whisper_features import compute_whisper_log_mel_features

    samples, _ = read_wav(speech("My flight number is B A four seven two.", rate=16_000))
    for audio in (samples, np.concatenate([samples] * 4)):  # shorter than the 8 s window, and longer
        window = np.zeros(128_000, dtype=np.float32)
        tail = audio[-128_000:]
        window[128_000 - len(tail) :] = tail  # as Pipecat pads (zeros before) or keeps the end
        ours = turn_features(audio.astype(np.float32))
        theirs = compute_whisper_log_mel_features(window, do_normalize=True)
        assert ours.shape == theirs.shape == (80, 800)
        assert float(np.abs(ours - theirs).max()) < 1e-4


async def test_a_bad_eagerness_is_an_error_event() -> None:
    async with SessionHarness(memory_services()) as h:
        await h.turn_detection(type="semantic_vad", eagerness="eager")
    (error,) = h.of_type("error")
    assert error["error"]["type"] == "invalid_request_error"
    assert "eagerness" in error["error"]["param"]
    assert "turn_detection" not in str(h.of_type("session.updated"))
