"""Breaker state in this process only: each edge replica decides alone."""

from __future__ import annotations

import pybreaker

from router.breaker_storage.base import BreakerStorage


class MemoryBreakerStorage(BreakerStorage):
    blocking = False

    def __init__(self) -> None:
        self._states: dict[str, pybreaker.CircuitMemoryStorage] = {}

    def for_region(self, region_id: str) -> pybreaker.CircuitBreakerStorage:
        if region_id not in self._states:
            self._states[region_id] = pybreaker.CircuitMemoryStorage(pybreaker.STATE_CLOSED)
        return self._states[region_id]

    def describe(self) -> str:
        return "memory"
