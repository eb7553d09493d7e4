"""One pybreaker circuit breaker per region, driven from async code.

pybreaker only wraps synchronous calls (its ``call_async`` is Tornado-only), and
``breaker.call(coroutine_function)`` would "succeed" the moment the coroutine object is created.
So the router splits a call in two: ``admit()`` before the awaited work (refuses while open, lets
one trial through once the reset timeout has passed), and after it replays the awaited outcome
through ``breaker.call`` with a tiny synchronous function that returns or re-raises it. pybreaker's
own state machine then counts the failure, trips, or closes after a good trial, exactly as for a
synchronous call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pybreaker

from router import metrics
from router.breaker_storage import BreakerStorage
from wire.errors import BreakerOpen, RegionError

log = logging.getLogger(__name__)

T = TypeVar("T")

_STATE_VALUE = {pybreaker.STATE_CLOSED: 0, pybreaker.STATE_HALF_OPEN: 1, pybreaker.STATE_OPEN: 2}


def _replay(outcome: BaseException | None) -> None:
    if outcome is not None:
        raise outcome


class _Listener(pybreaker.CircuitBreakerListener):
    def __init__(self, board: BreakerBoard) -> None:
        self._board = board

    def state_change(self, cb: pybreaker.CircuitBreaker, old_state: Any, new_state: Any) -> None:
        region = str(cb.name)
        old = old_state.name if old_state is not None else "none"
        log.warning("region %s: circuit breaker %s -> %s", region, old, new_state.name)
        metrics.BREAKER_TRANSITIONS.labels(region, old, new_state.name).inc()
        metrics.BREAKER_STATE.labels(region).set(_STATE_VALUE.get(new_state.name, -1))
        self._board.transitions[region] = (old, new_state.name, time.time())


class BreakerBoard:
    """The breakers of all regions, one storage backend behind them."""

    def __init__(self, storage: BreakerStorage, *, fail_max: int, reset_timeout_s: float) -> None:
        self.storage = storage
        self._fail_max = fail_max
        self._reset_s = reset_timeout_s
        self._breakers: dict[str, pybreaker.CircuitBreaker] = {}
        self._trials: set[str] = set()
        self._listener = _Listener(self)
        self._known: dict[str, str] = {}
        self._opened_at: dict[str, datetime | None] = {}
        """Last state (and opening time) read per region: ranking reads these, never the backend."""
        self.transitions: dict[str, tuple[str, str, float]] = {}

    def breaker(self, region: str) -> pybreaker.CircuitBreaker:
        b = self._breakers.get(region)
        if b is None:
            b = pybreaker.CircuitBreaker(
                fail_max=self._fail_max,
                reset_timeout=self._reset_s,
                state_storage=self.storage.for_region(region),
                listeners=[self._listener],
                name=region,
            )
            self._breakers[region] = b
            metrics.BREAKER_STATE.labels(region).set(0)
        return b

    async def _io(self, fn: Callable[[], T]) -> T:
        # Redis-backed state is network I/O: keep it off the event loop.
        if self.storage.blocking:
            return await asyncio.to_thread(fn)
        return fn()

    # Reads.
    def known_state(self, region: str) -> str:
        return self._known.get(region, pybreaker.STATE_CLOSED)

    def may_admit(self, region: str) -> bool:
        """Cheap check from the last known state (for ranking); ``admit`` has the final word."""
        state = self._known.get(region, pybreaker.STATE_CLOSED)
        if state == pybreaker.STATE_CLOSED:
            return True
        if state == pybreaker.STATE_HALF_OPEN:
            return region not in self._trials
        return self._reset_elapsed(self._opened_at.get(region))

    def _reset_elapsed(self, opened: datetime | None) -> bool:
        return opened is None or datetime.now(UTC) >= opened + timedelta(seconds=self._reset_s)

    def _read(self, region: str) -> str:
        # ``.state`` re-syncs the cached state with storage (and notifies listeners if another
        # replica changed it), where ``current_state`` would only read.
        state = str(self.breaker(region).state.name)
        self._known[region] = state
        if state == pybreaker.STATE_OPEN:
            self._opened_at[region] = self.storage.for_region(region).opened_at
        return state

    async def refresh(self, regions: list[str]) -> None:
        def read_all() -> None:
            for r in regions:
                self._read(r)

        await self._io(read_all)

    # The call protocol: admit, await the work, record its outcome.
    async def admit(self, region: str) -> None:
        """Raise ``BreakerOpen`` unless the breaker lets a call through now."""

        def check() -> None:
            state = self._read(region)
            if state == pybreaker.STATE_CLOSED:
                return
            if state == pybreaker.STATE_OPEN:
                if not self._reset_elapsed(self._opened_at.get(region)):
                    raise BreakerOpen(f"region {region}: circuit breaker open", region=region)
                self.breaker(region).half_open()
                self._known[region] = pybreaker.STATE_HALF_OPEN
            if region in self._trials:
                raise BreakerOpen(f"region {region}: half-open, trial turn in flight", region=region)
            self._trials.add(region)

        await self._io(check)

    async def record(self, region: str, outcome: RegionError | None) -> None:
        """Feed an awaited call's outcome (``None`` = success, else a failure that counts: the caller,
        ``router.health_board``, decides which do) through pybreaker's state machine."""
        self._trials.discard(region)

        def replay() -> None:
            try:
                self.breaker(region).call(_replay, outcome)
            except pybreaker.CircuitBreakerError:
                pass  # the failure tripped the breaker, or another replica had opened it
            except RegionError:
                pass  # the replayed failure itself, now counted
            self._read(region)

        await self._io(replay)

    def release(self, region: str) -> None:
        """The call ended with no verdict on the region: free the trial slot."""
        self._trials.discard(region)

    def status(self, region: str) -> dict[str, object]:
        b = self._breakers.get(region)
        last = self.transitions.get(region)
        return {
            "state": self.known_state(region),
            "fail_counter": None if b is None or self.storage.blocking else b.fail_counter,
            "trial_in_flight": region in self._trials,
            "last_transition": None
            if last is None
            else {"from": last[0], "to": last[1], "at": datetime.fromtimestamp(last[2], UTC).isoformat()},
        }

    def close(self) -> None:
        self.storage.close()
