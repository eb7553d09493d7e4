"""Silero VAD for every session of the process, run batched in one place, at 8 kHz.

Each session's ``VadStream`` pushes one 32 ms chunk of its input buffer (768 samples at 24 kHz) at
a time, and hears its speech probability back by callback (``ChunkSource.heard``): nothing awaits
a chunk, so an append costs no future and no wake-up of its session's task (in process, 600
sessions: 1.55-1.71 -> 1.37-1.44 ms CPU per stream-second; docs/benchmarks.md). The ``VadBatcher``
task collects whatever chunks all sessions have pending, reads them from the sessions' buffers,
brings them to 8 kHz together (``edge.audio.decimate``), stacks them with each
stream's 32-sample context and recurrent state, and runs ONE model call with batch B on a dedicated
thread, so the event loop keeps relaying audio meanwhile. A stream never has two chunks in flight
(its state is sequential), so any batch holds each stream at most once.

Why 8 kHz: Silero has an 8 kHz mode of its own (trained for telephony), and a chunk costs about
60 % of a 16 kHz one (33 vs 58 us batched, this machine): VAD was most of the edge's CPU per audio
stream (docs/benchmarks.md, "Append hot path"). Turn boundaries moved by 0-3 chunks on the e2e
utterances, and transcripts of the turns cut did not move (14.6 vs 14.8 % WER on 320 turns).

The model is the ``silero-vad`` wheel's v6 export, which takes a batch and both rates, run by
OpenVINO or onnxruntime (``edge/audio/silero.py``); faster-whisper's (16 kHz only) is refused.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from edge.audio.batches import Batches
from edge.audio.decimate import HISTORY, decimate
from edge.audio.silero import CONTEXT, FRAME, MODEL_RATE, load_silero
from edge.shared.protocols import CHUNK, CHUNK_MS, F32, ChunkSource
from wire.tasks import cancel_and_wait

T = TypeVar("T")
log = logging.getLogger(__name__)

__all__ = ["CHUNK", "CHUNK_MS", "CONTEXT", "BatchStats", "VadBatcher", "VadStream"]


class VadStream:
    """One session's VAD. What it keeps between chunks (Silero's recurrent state and context, the
    decimator's input history) lives in rows of the batcher's arrays, at ``slot``: a batch gathers
    and scatters them in a few numpy calls instead of three small copies per stream each way."""

    __slots__ = ("__weakref__", "batcher", "slot")

    def __init__(self, batcher: VadBatcher, slot: int) -> None:
        self.batcher = batcher
        self.slot = slot

    def push(self, source: ChunkSource) -> None:
        """``source``'s next chunk in the next batch (``SpeechProbability``)."""
        self.batcher.push(self, source)

    async def probability(self, chunk: F32) -> float:
        """Speech probability of ``chunk`` (``CHUNK`` samples, 24 kHz float32), awaited (benches,
        tests: a session pushes)."""
        source = _Awaited(chunk, asyncio.get_running_loop().create_future())
        self.batcher.push(self, source)
        return await source.answer


@dataclass(eq=False)
class _Awaited:
    """A ``ChunkSource`` of one chunk whose answer is awaited."""

    chunk: F32
    answer: asyncio.Future[float]

    def next_chunk(self) -> F32:
        return self.chunk

    def heard(self, probability: float) -> None:
        if not self.answer.done():
            self.answer.set_result(probability)

    def failed(self, exc: Exception) -> None:
        if not self.answer.done():
            self.answer.set_exception(exc)


@dataclass
class BatchStats:
    calls: int = 0
    chunks: int = 0
    largest: int = 0


class VadBatcher:
    def __init__(self, model_path: str, *, runtime: str = "openvino", max_batch: int = 512) -> None:
        self.model = load_silero(model_path, runtime)
        self.max_batch = max_batch
        self.stats = BatchStats()
        self._batches: Batches[tuple[VadStream, ChunkSource]] = Batches()
        """Set while the batcher waits for a first chunk (a list and one future instead of an
        ``asyncio.Queue``, whose put and get cost more Python per chunk)."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vad")
        self._task: asyncio.Task[None] | None = None
        self._states = np.zeros((0, *self.model.initial_state().shape), dtype=np.float32)
        self._histories = np.zeros((0, HISTORY), dtype=np.float32)
        self._contexts = np.zeros((0, CONTEXT), dtype=np.float32)
        self._free: list[int] = []
        """Rows of those arrays no stream holds (a stream gives its row back when it is collected)."""

    def stream(self) -> VadStream:
        if not self._free:
            self._grow()
        slot = self._free.pop()
        self._states[slot] = self.model.initial_state()
        self._histories[slot] = 0.0
        self._contexts[slot] = 0.0
        stream = VadStream(self, slot)
        weakref.finalize(stream, self._free.append, slot)
        return stream

    def _grow(self) -> None:
        n = len(self._states)
        size = max(64, 2 * n)
        self._states, self._histories, self._contexts = (
            _grown(a, size) for a in (self._states, self._histories, self._contexts)
        )
        self._free.extend(range(size - 1, n - 1, -1))

    def status(self) -> dict[str, object]:
        return {
            "rate": MODEL_RATE,
            "runtime": self.model.runtime,
            "calls": self.stats.calls,
            "chunks": self.stats.chunks,
            "largest_batch": self.stats.largest,
        }

    def push(self, stream: VadStream, source: ChunkSource) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="vad-batcher")
        self._batches.put((stream, source))

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._batches.take(self.max_batch)
            slots = np.fromiter([stream.slot for stream, _ in batch], np.intp, len(batch))
            # Each chunk is read from its session's buffer now, as a view valid until that session's
            # next append (which runs on this thread, so not before the copy into the rows here).
            # (concatenated flat: half of what ``np.stack`` costs on hundreds of small views)
            rows = np.empty((len(batch), HISTORY + CHUNK), dtype=np.float32)
            rows[:, :HISTORY] = self._histories[slots]
            rows[:, HISTORY:] = np.concatenate([source.next_chunk() for _, source in batch]).reshape(
                -1, CHUNK
            )
            frames = np.empty((len(batch), FRAME), dtype=np.float32)
            frames[:, :CONTEXT] = self._contexts[slots]
            frames[:, CONTEXT:] = decimate(rows)
            try:
                probs, new_states = await loop.run_in_executor(
                    self._executor, self.model.run, frames, self._states[slots]
                )
            except Exception as exc:  # a model failure fails these chunks, never the batcher
                for _, source in batch:
                    _answer(source.failed, exc)
                continue
            self.stats.calls += 1
            self.stats.chunks += len(batch)
            self.stats.largest = max(self.stats.largest, len(batch))
            # (the arrays may have grown meanwhile: a new stream's row is never in this batch)
            self._states[slots] = new_states
            self._histories[slots] = rows[:, -HISTORY:]
            self._contexts[slots] = frames[:, -CONTEXT:]
            for (_, source), probability in zip(batch, probs.reshape(-1).tolist(), strict=True):
                _answer(source.heard, probability)

    async def aclose(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        self._executor.shutdown(wait=False)


def _grown(rows: F32, size: int) -> F32:
    out = np.zeros((size, *rows.shape[1:]), dtype=np.float32)
    out[: len(rows)] = rows
    return out


def _answer(callback: Callable[[T], None], value: T) -> None:
    """Hand a source its answer: a failing session costs that session, never the batcher."""
    try:
        callback(value)
    except Exception:
        log.exception("VAD: a session failed to take its answer")
