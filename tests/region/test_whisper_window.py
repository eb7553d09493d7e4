"""Whisper's encoder on part of its window (``region.whisper_window``), on the real Whisper base: a
short turn is encoded on the short window and heard alike; a turn longer than it gets the whole
window and loses nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from region.settings import FULL_WINDOW_FRAMES
from region.whisper_window import WindowedWhisper
from voicemesh.bench.e2e_report import words
from voicemesh.profiles import cpu_profile
from voicemesh.speech import espeak
from wire.audio import STT_RATE

pytestmark = pytest.mark.usefixtures("models")


class _Frames:
    """The CTranslate2 model, with the frame count of every encode it is asked for."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.frames: list[int] = []

    def encode(self, features: Any, **kwargs: Any) -> Any:
        self.frames.append(features.shape[-1])
        return self._model.encode(features, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def _whisper(window_frames: int) -> tuple[WindowedWhisper, _Frames]:
    stt = cpu_profile().stt
    model = WindowedWhisper(
        stt.model, device="cpu", compute_type=stt.compute_type, cpu_threads=stt.cpu_threads,
        window_frames=window_frames,
    )  # fmt: skip
    spy = _Frames(model.model)
    model.model = spy
    return model, spy


def _text(model: WindowedWhisper, audio: np.ndarray) -> str:
    segments, _ = model.transcribe(audio, language="en", beam_size=5, without_timestamps=True)
    return " ".join(s.text.strip() for s in segments)


@pytest.fixture(scope="module")
def question() -> np.ndarray:
    pad = np.zeros(STT_RATE // 2, dtype=np.float32)
    return np.concatenate([pad, espeak("Turn on the lights in the kitchen please.", STT_RATE), pad])


def test_a_short_turn_is_encoded_on_the_short_window_and_heard_alike(question: np.ndarray) -> None:
    short, short_frames = _whisper(1500)
    whole, whole_frames = _whisper(FULL_WINDOW_FRAMES)
    heard = _text(short, question)
    assert heard.lower().startswith("turn on the lights in the kitchen")
    # The same words (on an AMD EPYC the whole window put a comma before "please": punctuation is
    # not what a window changes the hearing of).
    assert words(heard) == words(_text(whole, question))
    assert short_frames.frames == [1500] and whole_frames.frames == [FULL_WINDOW_FRAMES]


def test_a_turn_longer_than_the_short_window_gets_the_whole_one(question: np.ndarray) -> None:
    # 20 s: silence, then the question at its very end (past the first 15 s).
    lead = np.zeros(20 * STT_RATE - len(question), dtype=np.float32)
    short, frames = _whisper(1500)
    assert "kitchen" in _text(short, np.concatenate([lead, question])).lower()
    assert frames.frames == [FULL_WINDOW_FRAMES]
