"""pybreaker driven from async code: awaited failures must count, trip, and close on a good trial."""

from __future__ import annotations

import asyncio
import time

import pybreaker
import pytest

from router.breaker_storage import MemoryBreakerStorage, RedisBreakerStorage, storage_from_url
from router.breakers import BreakerBoard
from wire.errors import BreakerOpen, FirstByteTimeout, RegionUnavailable


async def _fails_later() -> None:
    await asyncio.sleep(0.01)
    raise RegionUnavailable("connection refused", region="a")


def test_naive_pybreaker_call_misses_awaited_failures() -> None:
    """Why ``BreakerBoard`` exists: ``breaker.call(async_fn)`` records success at coroutine creation."""
    cb = pybreaker.CircuitBreaker(fail_max=2, reset_timeout=60)

    async def naive() -> None:
        for _ in range(3):
            with pytest.raises(RegionUnavailable):
                await cb.call(_fails_later)

    asyncio.run(naive())
    assert cb.current_state == pybreaker.STATE_CLOSED
    assert cb.fail_counter == 0


async def test_awaited_failures_trip_the_breaker() -> None:
    board = BreakerBoard(MemoryBreakerStorage(), fail_max=3, reset_timeout_s=60)
    for i in range(3):
        assert board.known_state("a") == pybreaker.STATE_CLOSED
        await board.admit("a")
        with pytest.raises(RegionUnavailable) as failed:
            await _fails_later()
        await board.record("a", failed.value)
        assert board.breaker("a").fail_counter == i + 1
    assert board.known_state("a") == pybreaker.STATE_OPEN
    assert not board.may_admit("a")
    with pytest.raises(BreakerOpen):
        await board.admit("a")
    assert board.transitions["a"][:2] == ("closed", "open")


async def test_success_resets_the_failure_count() -> None:
    board = BreakerBoard(MemoryBreakerStorage(), fail_max=2, reset_timeout_s=60)
    await board.admit("a")
    await board.record("a", FirstByteTimeout("slow", region="a"))
    assert board.breaker("a").fail_counter == 1
    await board.admit("a")
    await board.record("a", None)
    assert board.breaker("a").fail_counter == 0
    assert board.known_state("a") == pybreaker.STATE_CLOSED


async def test_a_released_call_gives_no_verdict_and_frees_the_trial() -> None:
    """Busy answers and cancelled calls are released (``router.health_board`` decides which)."""
    board = BreakerBoard(MemoryBreakerStorage(), fail_max=1, reset_timeout_s=0.1)
    await board.admit("a")
    board.release("a")
    assert board.known_state("a") == pybreaker.STATE_CLOSED
    assert board.breaker("a").fail_counter == 0
    await board.admit("a")
    await board.record("a", RegionUnavailable("down", region="a"))
    await asyncio.sleep(0.15)
    await board.admit("a")  # half-open: the one trial
    with pytest.raises(BreakerOpen):
        await board.admit("a")
    board.release("a")
    await board.admit("a")  # the released trial's slot is free again


async def test_half_open_admits_one_trial_and_closes_on_success() -> None:
    board = BreakerBoard(MemoryBreakerStorage(), fail_max=1, reset_timeout_s=0.2)
    await board.admit("a")
    await board.record("a", RegionUnavailable("down", region="a"))
    assert board.known_state("a") == pybreaker.STATE_OPEN
    with pytest.raises(BreakerOpen):
        await board.admit("a")
    await asyncio.sleep(0.25)
    assert board.may_admit("a")
    await board.admit("a")  # the trial
    assert board.known_state("a") == pybreaker.STATE_HALF_OPEN
    with pytest.raises(BreakerOpen, match="trial"):
        await board.admit("a")  # only one trial at a time
    await board.record("a", None)
    assert board.known_state("a") == pybreaker.STATE_CLOSED
    assert board.transitions["a"][:2] == ("half-open", "closed")


async def test_failed_trial_reopens() -> None:
    board = BreakerBoard(MemoryBreakerStorage(), fail_max=1, reset_timeout_s=0.1)
    await board.admit("a")
    await board.record("a", RegionUnavailable("down", region="a"))
    await asyncio.sleep(0.15)
    await board.admit("a")
    await board.record("a", RegionUnavailable("still down", region="a"))
    assert board.known_state("a") == pybreaker.STATE_OPEN
    assert not board.may_admit("a")


def test_storage_is_chosen_by_configuration(redis_url: str) -> None:
    assert isinstance(storage_from_url(None), MemoryBreakerStorage)
    storage = storage_from_url(redis_url, namespace="cfg")
    assert isinstance(storage, RedisBreakerStorage) and storage.blocking
    storage.close()


async def test_two_boards_share_state_through_real_redis(redis_url: str) -> None:
    ns = f"t{time.monotonic_ns()}"
    one = BreakerBoard(RedisBreakerStorage(redis_url, namespace=ns), fail_max=2, reset_timeout_s=1)
    two = BreakerBoard(RedisBreakerStorage(redis_url, namespace=ns), fail_max=2, reset_timeout_s=1)
    try:
        # Failures recorded by two replicas add up in one counter.
        await one.admit("a")
        await one.record("a", RegionUnavailable("down", region="a"))
        await two.admit("a")
        await two.record("a", RegionUnavailable("down", region="a"))
        await one.refresh(["a", "b"])
        assert one.known_state("a") == pybreaker.STATE_OPEN
        assert one.known_state("b") == pybreaker.STATE_CLOSED  # namespaced per region
        with pytest.raises(BreakerOpen):
            await one.admit("a")
        # Redis keeps opened_at in whole seconds: wait past the reset timeout plus that rounding.
        await asyncio.sleep(2.1)
        await two.admit("a")
        await two.record("a", None)
        await one.refresh(["a"])
        assert one.known_state("a") == pybreaker.STATE_CLOSED
        assert one.transitions["a"][1] == "closed"  # replica one noticed and logged the change
    finally:
        one.close()
        two.close()
