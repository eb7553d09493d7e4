"""What a region's models are doing right now, so one model can take cores the others leave idle.

Kokoro on two threads synthesises a clause 1.7x as fast as on one when nothing else runs, but
slower when decoding or another model holds a core (one thread waits for the other at every
operator; docs/benchmarks.md "Levers"). The stages count their running work here, and the
synthesiser asks whether it is alone before it picks a session.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Literal, get_args

Work = Literal["stt", "llm", "end_of_turn", "tts", "batch"]
"""``llm``: answers being written; ``end_of_turn``: the one-token end-of-turn question to the same model."""


class Workload:
    """Counts of running work per stage, on one event loop (its worker threads never touch it)."""

    def __init__(self) -> None:
        self._running: Counter[Work] = Counter()

    @contextlib.contextmanager
    def running(self, work: Work) -> Iterator[None]:
        self._running[work] += 1
        try:
            yield
        finally:
            self._running[work] -= 1

    def counts(self) -> dict[str, int]:
        """Running work per stage (the region's ``/health`` ``running``)."""
        return {work: self._running[work] for work in get_args(Work)}

    def idle(self) -> bool:
        """Nothing runs: a stage about to start may take every core."""
        return not any(self._running.values())
