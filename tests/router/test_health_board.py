"""The health board: the one place a region's health is written, and where "busy" is judged once."""

from __future__ import annotations

import pybreaker
import pytest

from router.breaker_storage import MemoryBreakerStorage
from router.breakers import BreakerBoard
from router.health import HealthReport
from router.health_board import HealthBoard, Latency, counts_as_failure
from router.registry import Location, RegionRecord, Registry
from router.settings import RouterSettings
from wire.errors import BreakerOpen, FirstByteTimeout, RegionBusy, RegionDisconnected

SETTINGS = RouterSettings(location=Location(50.0, 8.0), breaker_fail_max=1, breaker_reset_s=60)


def _board(*ids: str) -> HealthBoard:
    board = HealthBoard(SETTINGS, BreakerBoard(MemoryBreakerStorage(), fail_max=1, reset_timeout_s=60))
    board.apply(Registry(regions=[RegionRecord(id=i, url=f"http://127.0.0.1:{9000 + n}") for n, i in
                                  enumerate(ids)]))  # fmt: skip
    return board


def test_busy_is_judged_once_and_only_real_failures_count() -> None:
    assert not counts_as_failure(RegionBusy("full", region="a"))
    assert not counts_as_failure(BreakerOpen("open", region="a"))
    assert counts_as_failure(FirstByteTimeout("silent", region="a"))
    assert counts_as_failure(RegionDisconnected("gone", region="a"))


async def test_a_busy_answer_neither_trips_the_breaker_nor_adds_a_penalty() -> None:
    board = _board("a")
    a = board.regions["a"]
    await board.admit(a)
    await board.turn_ended(a, RegionBusy("full", region="a"))
    assert board.breakers.known_state("a") == pybreaker.STATE_CLOSED
    assert board.breakers.breaker("a").fail_counter == 0
    assert a.failures.value() == 0.0
    assert board.rank(None)[0][0] is a


async def test_a_failure_trips_the_breaker_and_penalises_the_region_a_success_forgives() -> None:
    board = _board("a", "b")
    a = board.regions["a"]
    await board.admit(a)
    await board.turn_ended(a, FirstByteTimeout("silent", region="a"))
    assert board.breakers.known_state("a") == pybreaker.STATE_OPEN  # fail_max 1
    assert a.failures.value() == pytest.approx(1.0, abs=0.05)
    assert [r.id for r, _ in board.rank(None)] == ["b"]
    with pytest.raises(BreakerOpen):
        await board.admit(a)

    b = board.regions["b"]
    await board.admit(b)
    await board.turn_ended(b, None, duration_s=2.5)
    assert b.turn_duration.value == pytest.approx(2.5)
    await board.admit(b)
    await board.turn_ended(b, None)  # a batch item's length: no speed measure
    assert b.turn_duration.value == pytest.approx(2.5)


async def test_an_abandoned_try_frees_the_half_open_trial() -> None:
    board = HealthBoard(SETTINGS, BreakerBoard(MemoryBreakerStorage(), fail_max=1, reset_timeout_s=0.0))
    board.apply(Registry(regions=[RegionRecord(id="a", url="http://127.0.0.1:9000")]))
    a = board.regions["a"]
    await board.admit(a)
    await board.turn_ended(a, RegionDisconnected("gone", region="a"))
    await board.admit(a)  # reset elapsed: the half-open trial
    assert not board.usable("a")
    board.abandoned(a)
    assert board.usable("a")


def test_probes_and_latencies_reach_the_regions_measures() -> None:
    board = _board("a")
    a = board.regions["a"]
    board.measured(a, Latency("first_byte", 0.2))
    board.measured(a, Latency("first_audio", 0.9))
    board.measured(a, Latency("clause_gap", 0.6, clause_chars=30))
    assert a.first_byte.value == pytest.approx(0.2) and a.ttfa.value == pytest.approx(0.9)
    assert a.synth_s_per_char.value == pytest.approx(0.6 / 30)
    board.probed(a, None, 0.0, "ConnectError: refused")
    assert not a.reachable and a.hang_suspected.is_set() and not board.usable("a")
    board.probed(a, HealthReport(capacity=2, free_slots=2), 0.01)
    assert a.reachable and board.usable("a")


def test_a_registry_change_keeps_unchanged_regions_and_names_the_stale_ones() -> None:
    board = _board("a", "b", "c")
    a, b = board.regions["a"], board.regions["b"]
    board.measured(a, Latency("first_audio", 0.7))
    stale = board.apply(
        Registry(
            regions=[
                RegionRecord(id="a", url="http://127.0.0.1:9000"),
                RegionRecord(id="b", url="http://127.0.0.1:9999"),  # moved
            ]
        )
    )
    assert sorted(stale) == ["b", "c"]
    assert board.regions["a"] is a and a.ttfa.value == pytest.approx(0.7)
    assert board.regions["b"] is not b and "c" not in board.regions


def test_nothing_left_names_residency_when_no_region_may_serve_it() -> None:
    board = _board("a")
    assert board.nothing_left_reason(frozenset({"eu"})) == "residency_refused"
    assert board.nothing_left_reason(None) == "no_region_available"
