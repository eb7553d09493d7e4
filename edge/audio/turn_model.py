"""Smart Turn v3.2 (Pipecat's end-of-turn model, BSD-2) for every session of the process, batched.

``semantic_vad`` asks it at a pause in the speech whether the user's turn is complete
(``edge/realtime/semantic_turns.py``). The model reads the turn's last 8 s at 16 kHz (zeros before a
shorter one), as Whisper log-mel features of the zero-mean unit-variance waveform, and gives the
probability of "complete" (Pipecat's ``local_smart_turn_v3.py``). The features are faster-whisper's
extractor (numpy; the same as Pipecat's own to 1e-6: ``tests/edge/test_turn_model.py``); the weights
come from the pipecat-ai wheel by ``voicemesh models fetch``, and nothing here imports Pipecat.

As for the VAD (``edge/audio/vad.py``), the questions all sessions have pending go in ONE model call
on one worker thread, so the event loop keeps relaying audio meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from faster_whisper.feature_extractor import FeatureExtractor

from edge.audio.batches import Batches
from edge.shared.metrics import TURN_MODEL_SECONDS
from edge.shared.protocols import F32
from wire.errors import ModelMissing
from wire.tasks import cancel_and_wait

log = logging.getLogger(__name__)

RATE = 16_000
WINDOW_S = 8
"""The model hears a turn's last 8 s (its training window)."""
_EXTRACTOR = FeatureExtractor(feature_size=80, sampling_rate=RATE, chunk_length=WINDOW_S)


def turn_features(audio: F32) -> F32:
    """Whisper log-mel features (80 x 800) of a turn's 16 kHz float audio, as the model takes them:
    its last ``WINDOW_S`` seconds, zeros before a shorter one, the waveform normalized first."""
    n = RATE * WINDOW_S
    x = np.zeros(n, dtype=np.float32)
    tail = audio[-n:]
    x[n - len(tail) :] = tail
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
    return np.asarray(_EXTRACTOR(x, padding=0), dtype=np.float32)


class SmartTurn:
    """The ONNX model on onnxruntime (one thread: the edge's cores relay audio)."""

    def __init__(self, path: str) -> None:
        if not path or not os.path.exists(path):
            raise ModelMissing(
                f"Smart Turn model {path or '(not set)'} not found: run `voicemesh models fetch` "
                "(it installs smart-turn/smart-turn-v3.2-cpu.onnx)"
            )
        so = ort.SessionOptions()
        so.inter_op_num_threads = 1
        so.intra_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.session = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])

    def run(self, turns: list[bytes]) -> list[float]:
        """Probability that each turn (16 kHz PCM16) is complete, in one model call."""
        started = time.perf_counter()
        audio = [np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0 for pcm in turns]
        features = np.stack([turn_features(a) for a in audio])
        (probs,) = self.session.run(None, {"input_features": features})
        TURN_MODEL_SECONDS.observe(time.perf_counter() - started)
        return [float(p) for p in np.asarray(probs).reshape(-1)]


class TurnModelBatcher:
    """``TurnModel`` for a whole edge: what every session asks meanwhile goes in one call."""

    def __init__(self, path: str, *, max_batch: int = 32) -> None:
        self.model = SmartTurn(path)
        self.max_batch = max_batch
        self.calls = 0
        self._batches: Batches[tuple[bytes, asyncio.Future[float]]] = Batches()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turn-model")
        self._task: asyncio.Task[None] | None = None

    async def complete(self, pcm16k: bytes) -> float:
        loop = asyncio.get_running_loop()
        if self._task is None:
            self._task = loop.create_task(self._run(), name="turn-model-batcher")
        answer: asyncio.Future[float] = loop.create_future()
        self._batches.put((pcm16k, answer))
        return await answer

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._batches.take(self.max_batch)
            try:
                probs = await loop.run_in_executor(self._executor, self.model.run, [t for t, _ in batch])
            except Exception as exc:  # a model failure fails these questions, never the batcher
                log.exception("turn model failed on a batch of %d", len(batch))
                for _, answer in batch:
                    if not answer.done():
                        answer.set_exception(exc)
                continue
            self.calls += 1
            for (_, answer), p in zip(batch, probs, strict=True):
                if not answer.done():  # (a session that went away stopped waiting)
                    answer.set_result(p)

    async def aclose(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        self._executor.shutdown(wait=False)


__all__ = ["RATE", "WINDOW_S", "SmartTurn", "TurnModelBatcher", "turn_features"]
