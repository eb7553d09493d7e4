"""The interface every breaker-state backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

import pybreaker


class BreakerStorage(ABC):
    """Hands out one pybreaker storage per region; the same region always gets the same state."""

    blocking: bool = False
    """True when reading or writing state does network I/O: callers then run it off the loop."""

    @abstractmethod
    def for_region(self, region_id: str) -> pybreaker.CircuitBreakerStorage: ...

    def describe(self) -> str:
        return type(self).__name__

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections."""
