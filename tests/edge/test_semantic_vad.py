"""``semantic_vad`` (``edge/realtime/semantic_turns.py``): a thinking pause inside a sentence does not
end the turn, the end of the sentence does, at once; ``server_vad`` keeps its silence window.

Real sessions and frames through ``SessionHarness``, the real Silero VAD and the real Smart Turn
v3.2 model on espeak-ng speech. The thinking-pause tests under ``semantic_vad`` route to the
session's real region (Whisper, vLLM SmolLM2) through the real router: the words at each pause are
its LLM's (``region/end_of_turn.py``); elsewhere the router is scripted (its regions are not what is
under test: no words, so Smart Turn alone decides).

The speech is espeak-ng's ``en`` voice with the pause written into one utterance (SSML
``<break/>``), so the words before it keep the intonation of a sentence going on. Smart Turn hears
prosody more than words, and on synthetic speech it is fragile: at the edge (the VAD's cut, its
192 ms pause) it scores the cut halves complete (0.72 and 0.63) and the flight sentence's end not
(0.20). The words decide those (a cut sentence's end is not among the LLM's likeliest tokens).
What the models said is asserted, not only the turns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from prometheus_client import REGISTRY

from edge.audio.turn_model import TurnModelBatcher, turn_features
from edge.audio.vad import VadBatcher
from edge.realtime.semantic_turns import WORDS_GO_ON, complete
from edge.shared.settings import EdgeSettings
from edge.testing import ScriptedRouter, SessionHarness, memory_services, silence, spoken_reply
from router.api import TurnRouter
from router.core import Router
from router.registry import RegionRecord, Registry
from router.settings import RouterSettings
from tests.fixtures.common import SpeechFactory
from tests.fixtures.region import RunningRegion
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
    models: dict[str, Path], audio: bytes, router: TurnRouter | None = None, silence_s: float = 5.0,
    **turn_detection: object,
) -> tuple[SessionHarness, Recorded]:  # fmt: skip
    """One session hearing ``audio`` then ``silence_s`` of silence (past any eagerness timeout but
    low's, by default)."""
    vad = VadBatcher(str(models["silero-vad"] / "silero_vad.onnx"))
    recorded = Recorded(TurnModelBatcher(str(models["smart-turn"] / "smart-turn-v3.2-cpu.onnx")))
    services = memory_services(
        router or ScriptedRouter(spoken_reply("Sure.")), vad=vad, turn_model=recorded,
        settings=EdgeSettings(api_keys=("test-key",)),
    )  # fmt: skip
    try:
        async with SessionHarness(services) as h:
            await h.turn_detection(**turn_detection)
            await h.append_audio(audio + silence(silence_s))
            n = len(h.of_type("input_audio_buffer.committed"))
            await h.wait_for("response.done", n, within_s=300)
    finally:
        await services.aclose()
    return h, recorded


@pytest.mark.parametrize(("first", "rest"), SENTENCES)
async def test_a_thinking_pause_is_one_turn_under_semantic_vad(
    models: dict[str, Path], speech: SpeechFactory, region: RunningRegion, region_keys: Path,
    first: str, rest: str,
) -> None:  # fmt: skip
    by_model = _ends("model")
    settings = RouterSettings(region_keys_path=str(region_keys), probe_interval_s=0.5)
    async with Router(settings, registry=Registry(regions=[RegionRecord(id=region.id, url=region.url)])) as r:
        # Low eagerness: the words are awaited up to its 8 s, room for a busy machine's Whisper.
        h, recorded = await _turns(models, _paused(speech, first, rest), r, 10.0, type="semantic_vad",
                                   eagerness="low")  # fmt: skip
    updated = h.of_type("session.updated")[-1]["session"]["audio"]["input"]["turn_detection"]
    assert updated == {
        "type": "semantic_vad", "eagerness": "low", "create_response": True, "interrupt_response": True,
    }  # fmt: skip
    verdicts = list(h.session.turns.semantic.verdicts)
    assert len(h.of_type("input_audio_buffer.committed")) == 1, verdicts
    assert len(h.of_type("response.created")) == 1
    # At the thinking pause the words go on (whatever Smart Turn heard); at the sentence's end the
    # turn is complete, at once: the models ended it, not the 8 s timeout.
    pause, end = verdicts[0], verdicts[-1]
    assert pause.words is not None and pause.words < WORDS_GO_ON and not pause.complete, verdicts
    assert end.words is not None and end.complete, verdicts
    assert recorded.answers and len(recorded.answers) == len(verdicts)
    assert _ends("model") == by_model + 1
    (done,) = h.of_type("response.done")
    assert done["response"]["status"] == "completed", done


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


@pytest.mark.parametrize(
    ("words", "voice", "ends"),
    [
        (0.0, 0.98, False),  # a cut sentence goes on, however final the voice sounds
        (0.49, 0.2, True),  # whole words end the turn, however flat the voice
        (0.05, 0.7, True),  # in between, the voice decides
        (0.05, 0.3, False),
        (None, 0.7, True),  # no words (no answer started, none in time): the voice alone
        (None, None, False),  # nothing answered: the eagerness timeout ends the turn
    ],
)
def test_the_words_decide_when_clear_and_the_voice_in_between(
    words: float | None, voice: float | None, ends: bool
) -> None:
    assert complete(words, voice) is ends
