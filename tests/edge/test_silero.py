"""Silero on its two runtimes: OpenVINO (the edge's default) gives what onnxruntime gives, row for
row, whatever the batch size (each batch padded up to a compiled size), and both refuse a model
that is not the silero-vad wheel's export with a message that says what to do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import faster_whisper
import numpy as np
import pytest

from edge.audio.decimate import HISTORY, decimate
from edge.audio.silero import FRAME, LADDER, batch_plan, flat_8k_graph, load_silero
from edge.audio.vad import CHUNK, CONTEXT
from wire.audio import read_wav
from wire.errors import ModelMissing


@pytest.fixture(scope="module")
def model_path(models: dict[str, Path]) -> str:
    return str(models["silero-vad"] / "silero_vad.onnx")


@pytest.fixture(scope="module")
def chunks(speech: Callable[..., Path]) -> np.ndarray:
    """Speech with a second of silence on each side, in the batcher's 32 ms chunks at 24 kHz."""
    samples, _ = read_wav(speech("How do I boil an egg? Turn on the kitchen lights.", rate=24_000))
    quiet = np.zeros(24_000, dtype=np.float32)
    audio = np.concatenate([quiet, samples, quiet])
    return audio[: len(audio) // CHUNK * CHUNK].reshape(-1, CHUNK)


def _stream(model_path: str, runtime: str, chunks: np.ndarray, streams: int) -> np.ndarray:
    """``streams`` streams of ``chunks``, each started ``7 * i`` chunks in, run as the batcher runs
    them (one call a step, every stream in it): probabilities (steps, streams)."""
    model = load_silero(model_path, runtime)
    order = [np.roll(chunks, -7 * i, axis=0) for i in range(streams)]
    history = np.zeros((streams, HISTORY), np.float32)
    context = np.zeros((streams, CONTEXT), np.float32)
    states = np.stack([model.initial_state()] * streams)
    probs = []
    for step in range(len(chunks)):
        rows = np.concatenate([history, np.stack([o[step] for o in order])], axis=1)
        frames = np.concatenate([context, decimate(rows)], axis=1)
        p, states = model.run(frames, states)
        assert p.shape == (streams,) and states.shape == (streams, 2, 128)
        probs.append(p)
        history, context = rows[:, -HISTORY:], frames[:, -CONTEXT:]
    return np.array(probs)


@pytest.mark.parametrize("streams", [1, 5, 13])  # 5 and 13 are padded (to 6 and 16)
def test_openvino_gives_what_onnxruntime_gives(model_path: str, chunks: np.ndarray, streams: int) -> None:
    assert streams == 1 or streams not in LADDER
    ov = _stream(model_path, "openvino", chunks, streams)
    ort = _stream(model_path, "onnxruntime", chunks, streams)
    np.testing.assert_allclose(ov, ort, atol=2e-3)
    assert ((ov >= 0.5) == (ort >= 0.5)).all()  # the same chunks are speech
    assert ov.max() > 0.8 and ov[:20, 0].max() < 0.3  # speech found, the leading second not


def test_a_row_gets_the_same_answer_in_any_batch(model_path: str, chunks: np.ndarray) -> None:
    model = load_silero(model_path, "openvino")
    rng = np.random.default_rng(0)
    # 300 rows of speech (any 288 samples will do), run as 256 + 48 (``batch_plan``)
    frames = np.resize(chunks[40:140, :FRAME], (300, FRAME)).astype(np.float32)
    states = (rng.standard_normal((300, 2, 128)) * 0.1).astype(np.float32)
    whole, whole_states = model.run(frames, states)
    for n in (1, 7, 33, 100):  # sizes of their own, padded ones and split ones
        p, s = model.run(frames[:n], states[:n])
        np.testing.assert_allclose(p, whole[:n], atol=1e-5)
        np.testing.assert_allclose(s, whole_states[:n], atol=1e-5)
    p, _ = model.run(frames[:7], states[:7])
    p[:] = -1  # results are arrays of their own: the next call does not write into them
    model.run(frames[:7], states[:7])
    assert (p == -1).all()


def test_batch_plan_pads_little_and_covers_every_row() -> None:
    assert batch_plan(300) == [256, 48] and batch_plan(48) == [48] and batch_plan(5) == [8]
    assert batch_plan(1100) == [512, 512, 64, 16]  # over the ladder's top: split, never compiled
    for n in range(1, 1200):
        plan = batch_plan(n)
        assert all(size in LADDER for size in plan) and sum(plan[:-1]) < n <= sum(plan), n
        assert sum(plan) - n <= max(n // 8, 15), (n, plan)


@pytest.mark.parametrize("runtime", ["openvino", "onnxruntime"])
def test_a_model_that_is_not_the_wheels_export_is_refused(runtime: str, tmp_path: Path) -> None:
    # faster-whisper's Silero copy: 16 kHz only, h/c state, no batch
    other = Path(faster_whisper.__file__).parent / "assets" / "silero_vad_v6.onnx"
    with pytest.raises(ModelMissing, match="voicemesh models fetch"):
        load_silero(str(other), runtime)
    missing = tmp_path / "nothing.onnx"
    with pytest.raises(ModelMissing, match="voicemesh models fetch"):
        load_silero(str(missing), runtime)


def test_flat_graph_is_the_8khz_branch(model_path: str) -> None:
    import onnx

    graph = onnx.load_from_string(flat_8k_graph(model_path)).graph
    assert [i.name for i in graph.input] == ["input", "state"]  # no `sr`: the If on it is gone
    assert not any("sr" in n.input for n in graph.node)


def test_unknown_runtime(model_path: str) -> None:
    with pytest.raises(ValueError, match="openvino, onnxruntime"):
        load_silero(model_path, "tensorrt")
