"""Breaker state in Redis: every edge replica sees one breaker per region.

pybreaker's ``CircuitRedisStorage`` uses the synchronous redis-py client, so ``blocking`` is set and
the router calls it from a worker thread. Its ``opened_at`` has one-second resolution: the reset
timeout is honoured to within a second.
"""

from __future__ import annotations

import pybreaker
import redis

from router.breaker_storage.base import BreakerStorage


class RedisBreakerStorage(BreakerStorage):
    blocking = True

    def __init__(self, url: str, *, namespace: str = "voicemesh") -> None:
        self._url = url
        self._namespace = namespace
        # Short timeouts: a slow Redis must not stall routing; pybreaker falls back to "closed".
        self._client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self._states: dict[str, pybreaker.CircuitRedisStorage] = {}

    def for_region(self, region_id: str) -> pybreaker.CircuitBreakerStorage:
        if region_id not in self._states:
            self._states[region_id] = pybreaker.CircuitRedisStorage(
                pybreaker.STATE_CLOSED, self._client, namespace=f"{self._namespace}:breaker:{region_id}"
            )
        return self._states[region_id]

    def describe(self) -> str:
        return f"redis ({self._url})"

    def close(self) -> None:
        self._client.close()
