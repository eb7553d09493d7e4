"""A turn's cancel signal, reaching into worker threads (asyncio cancellation stops at the thread edge)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import onnxruntime as ort


class Cancelled(Exception):
    """A stage stopped because its turn was cancelled."""


class CancelToken:
    """Set once; STT polls it between segments, TTS ONNX runs are terminated in place."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._runs: set[ort.RunOptions] = set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            for options in self._runs:
                # onnxruntime checks this flag between graph nodes: the run raises within milliseconds.
                options.terminate = True

    async def settled(self, within_s: float = 0.5) -> bool:
        """Wait until no ONNX run of this turn is in flight (a terminated run needs a few ms to return)."""
        deadline = time.perf_counter() + within_s
        while self._runs:
            if time.perf_counter() > deadline:
                return False
            await asyncio.sleep(0.002)
        return True

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled

    @contextmanager
    def onnx_run(self) -> Iterator[ort.RunOptions]:
        """RunOptions for one ONNX run that ``cancel()`` terminates."""
        options = ort.RunOptions()
        with self._lock:
            options.terminate = self._event.is_set()
            self._runs.add(options)
        try:
            yield options
        finally:
            with self._lock:
                self._runs.discard(options)
