"""Silero VAD for every session of the process, run batched in one place, at 8 kHz.

Each session's ``VadStream`` submits one 32 ms chunk of its input buffer (768 samples at 24 kHz) at
a time and awaits its speech probability. The ``VadBatcher`` task collects whatever chunks all
sessions have pending, brings them to 8 kHz together (``edge.decimate``), stacks them with each
stream's 32-sample context and recurrent state, and runs ONE model call with batch B on a dedicated
thread, so the event loop keeps relaying audio meanwhile. A stream never has two chunks in flight
(its state is sequential), so any batch holds each stream at most once.

Why 8 kHz: Silero has an 8 kHz mode of its own (trained for telephony), and a chunk costs about
60 % of a 16 kHz one (33 vs 58 us batched, this machine): VAD was most of the edge's CPU per audio
stream (docs/benchmarks.md, "Append hot path"). Turn boundaries moved by 0-3 chunks on the e2e
utterances, and transcripts of the turns cut did not move (14.6 vs 14.8 % WER on 320 turns).

The model is the ``silero-vad`` wheel's v6 export, which takes a batch and both rates, run by
OpenVINO or onnxruntime (``edge/silero.py``); faster-whisper's (16 kHz only) is refused.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from edge.decimate import HISTORY, decimate
from edge.protocols import CHUNK, CHUNK_MS, F32
from edge.silero import CONTEXT, FRAME, MODEL_RATE, load_silero
from wire.tasks import cancel_and_wait

__all__ = ["CHUNK", "CHUNK_MS", "CONTEXT", "BatchStats", "VadBatcher", "VadStream"]


@dataclass(eq=False)
class VadStream:
    """One session's VAD: its recurrent state, and what it keeps of the previous chunk (the
    decimator's input history, Silero's context) between chunks."""

    batcher: VadBatcher
    state: F32
    history: F32 = field(default_factory=lambda: np.zeros(HISTORY, dtype=np.float32))
    context: F32 = field(default_factory=lambda: np.zeros(CONTEXT, dtype=np.float32))

    async def probability(self, chunk: F32) -> float:
        """Speech probability of the next ``CHUNK`` samples (24 kHz float32)."""
        return await self.batcher.submit(self, chunk)


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
        self._pending: list[tuple[VadStream, F32, asyncio.Future[float]]] = []
        self._wake: asyncio.Future[None] | None = None
        """Set while the batcher waits for a first chunk (a list and one future instead of an
        ``asyncio.Queue``, whose put and get cost more Python per chunk)."""
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vad")
        self._task: asyncio.Task[None] | None = None

    def stream(self) -> VadStream:
        return VadStream(self, self.model.initial_state())

    def status(self) -> dict[str, object]:
        return {
            "rate": MODEL_RATE,
            "runtime": self.model.runtime,
            "calls": self.stats.calls,
            "chunks": self.stats.chunks,
            "largest_batch": self.stats.largest,
        }

    async def submit(self, stream: VadStream, chunk: F32) -> float:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="vad-batcher")
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._pending.append((stream, chunk, fut))
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        return await fut

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._pending:
                self._wake = loop.create_future()
                await self._wake
                self._wake = None
            batch = self._pending[: self.max_batch]
            del self._pending[: self.max_batch]
            batch = [item for item in batch if not item[2].done()]  # sessions that went away
            if not batch:
                continue
            # Arrays filled in place: the chunks are views of each session's buffer, valid until
            # its append returns (it awaits this batch), so each row is copied here.
            rows = np.empty((len(batch), HISTORY + CHUNK), dtype=np.float32)
            frames = np.empty((len(batch), FRAME), dtype=np.float32)
            for i, (stream, chunk, _) in enumerate(batch):
                rows[i, :HISTORY] = stream.history
                rows[i, HISTORY:] = chunk
                frames[i, :CONTEXT] = stream.context
            frames[:, CONTEXT:] = decimate(rows)
            states = np.stack([s.state for s, _, _ in batch])
            try:
                probs, new_states = await loop.run_in_executor(self._executor, self.model.run, frames, states)
            except Exception as exc:  # a model failure fails these chunks, never the batcher
                for _, _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            self.stats.calls += 1
            self.stats.chunks += len(batch)
            self.stats.largest = max(self.stats.largest, len(batch))
            # (streams keep copies: not views that hold the whole batch's arrays)
            histories, contexts = rows[:, -HISTORY:].copy(), frames[:, -CONTEXT:].copy()
            for i, (stream, _, fut) in enumerate(batch):
                stream.state = new_states[i]
                stream.history = histories[i]
                stream.context = contexts[i]
                if not fut.done():
                    fut.set_result(float(probs[i]))

    async def aclose(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        self._executor.shutdown(wait=False)
