"""Scoring, decaying averages, residency, retry budget, text continuation: the router's pure parts."""

from __future__ import annotations

import math

import pytest

from router.choice import rank, residency_allows
from router.continuation import TurnProgress, unvoiced_rest
from router.geo import distance_km
from router.health import HealthReport, RegionHealth
from router.registry import Location, RegionRecord
from router.settings import RouterSettings
from wire.rates import DecayingCounter, DecayingEwma, TokenBucket

FRANKFURT = Location(50.11, 8.68)
VIRGINIA = Location(38.95, -77.45)


def _region(
    rid: str, loc: Location = FRANKFURT, residency: tuple[str, ...] = (), **kw: object
) -> RegionHealth:
    s = RouterSettings(location=FRANKFURT, **kw)  # type: ignore[arg-type]
    return RegionHealth(
        RegionRecord(id=rid, url="http://127.0.0.1:1", location=loc, residency=list(residency)), s
    )


def test_ewma_decays_with_time_not_sample_count() -> None:
    e = DecayingEwma(tau_s=10.0)
    e.update(1.0, now=0.0)
    # One sample a tau later moves the average 1 - 1/e of the way.
    assert e.update(2.0, now=10.0) == pytest.approx(1.0 + (1 - math.exp(-1)))
    e2 = DecayingEwma(tau_s=10.0)
    e2.update(1.0, now=0.0)
    assert e2.update(2.0, now=100.0) == pytest.approx(2.0, abs=1e-3)  # an old sample is forgotten
    e3 = DecayingEwma(tau_s=10.0)
    e3.update(1.0, now=0.0)
    assert 1.0 < e3.update(2.0, now=0.0) < 1.2  # a burst still counts, a little


def test_failure_counter_fades() -> None:
    c = DecayingCounter(tau_s=30.0)
    c.add(now=0.0)
    c.add(now=0.0)
    assert c.value(now=0.0) == pytest.approx(2.0)
    assert c.value(now=30.0) == pytest.approx(2 * math.exp(-1))


def test_distance_prior_orders_unmeasured_regions() -> None:
    assert distance_km(FRANKFURT, VIRGINIA) == pytest.approx(6500, rel=0.05)
    near, far = _region("fra"), _region("iad", VIRGINIA)
    assert near.score().latency_s < far.score().latency_s
    assert not near.score().measured
    ranked = rank([far, near], residency=None, may_admit=lambda _r: True)
    assert [r.id for r, _ in ranked] == ["fra", "iad"]


def test_measured_latency_beats_the_prior() -> None:
    near, far = _region("fra"), _region("iad", VIRGINIA)
    near.observe_ttfa(3.0)
    far.observe_ttfa(0.8)
    assert [r.id for r, _ in rank([near, far], residency=None, may_admit=lambda _r: True)] == ["iad", "fra"]


def test_fast_failing_region_never_looks_attractive() -> None:
    fast_fail, slow_ok = _region("a"), _region("b")
    fast_fail.observe_ttfa(0.2)
    slow_ok.observe_ttfa(1.5)
    fast_fail.observe_failure()
    ranked = rank([fast_fail, slow_ok], residency=None, may_admit=lambda _r: True)
    assert ranked[0][0].id == "b"
    assert ranked[1][1].penalty_s > 1.0


def test_queue_wait_counts_in_the_score() -> None:
    idle, busy = _region("a"), _region("b")
    idle.observe_ttfa(1.0)
    busy.observe_ttfa(0.6)
    idle.observe_probe(HealthReport(free_slots=2, capacity=2, queue_depth=0), 0.002)
    busy.observe_probe(HealthReport(free_slots=0, capacity=2, queue_depth=3, estimated_turn_s=4.0), 0.002)
    assert busy.expected_wait_s() == pytest.approx(8.0)
    assert rank([idle, busy], residency=None, may_admit=lambda _r: True)[0][0].id == "a"


def test_unready_or_unreachable_or_open_regions_are_not_candidates() -> None:
    warming, dead, open_, ok = _region("w"), _region("d"), _region("o"), _region("k")
    warming.observe_probe(HealthReport(status="starting"), 0.001)
    dead.observe_probe(None, 0.0, "ConnectError")
    ranked = rank([warming, dead, open_, ok], residency=None, may_admit=lambda r: r != "o")
    assert [r.id for r, _ in ranked] == ["k"]


def test_residency_filter_holds_even_when_it_leaves_nothing() -> None:
    eu, us = _region("eu-1", residency=("eu",)), _region("us-1", VIRGINIA, residency=("us",))
    assert residency_allows(eu.record, frozenset({"eu"}))
    assert not residency_allows(us.record, frozenset({"eu"}))
    assert residency_allows(us.record, None)
    assert [r.id for r, _ in rank([eu, us], residency=frozenset({"eu"}), may_admit=lambda _r: True)] == [
        "eu-1"
    ]
    assert rank([eu, us], residency=frozenset({"eu"}), may_admit=lambda _r: True, exclude={"eu-1"}) == []


def test_sticky_region_stays_first_while_healthy() -> None:
    a, b = _region("a"), _region("b")
    a.observe_ttfa(1.0)
    b.observe_ttfa(1.2)
    assert rank([a, b], residency=None, may_admit=lambda _r: True, sticky="b")[0][0].id == "b"
    b.observe_failure()  # no longer healthy: stickiness gives way
    assert rank([a, b], residency=None, may_admit=lambda _r: True, sticky="b")[0][0].id == "a"


def test_sticky_session_overflows_when_its_region_queues() -> None:
    a, b = _region("a"), _region("b")
    a.observe_ttfa(1.0)
    b.observe_ttfa(1.1)
    b.observe_probe(HealthReport(queue_depth=3, free_slots=0, capacity=2, estimated_turn_s=6.0), 0.01)
    a.observe_probe(HealthReport(queue_depth=0, free_slots=2, capacity=2, estimated_turn_s=6.0), 0.01)
    ranked = rank([a, b], residency=None, may_admit=lambda _r: True, sticky="b")
    assert ranked[0][0].id == "a", [(r.id, sc) for r, sc in ranked]
    assert ranked[1][1].queue_wait_s > 1.0


def test_deadlines_follow_the_region_latency() -> None:
    r = _region("a", first_byte_floor_s=0.3, first_audio_floor_s=1.0, first_audio_factor=3.0)
    assert r.first_byte_deadline_s() == pytest.approx(0.3)
    for _ in range(5):
        r.observe_first_byte(0.2)
        r.observe_ttfa(1.5)
    assert r.first_byte_deadline_s() == pytest.approx(0.8, rel=0.01)
    assert r.first_audio_deadline_s() == pytest.approx(4.5, rel=0.01)


def test_retry_budget_refills_and_refuses() -> None:
    b = TokenBucket(rate_per_s=1.0, burst=2.0)
    assert b.take(now=b._at) and b.take(now=b._at)
    assert not b.take(now=b._at)
    assert b.refused == 1
    assert b.take(now=b._at + 1.0)
    assert b.available(now=b._at + 100) == 2.0  # capped at the burst


def test_unvoiced_text_is_what_arrived_without_audio() -> None:
    assert (
        unvoiced_rest("Paris is the capital. It is in France.", "Paris is the capital.") == "It is in France."
    )
    assert unvoiced_rest("Paris is  the capital.It is big.", "Paris is the capital.") == "It is big."
    assert unvoiced_rest("Hello there.", "") == "Hello there."
    assert unvoiced_rest("Hello there.", "Hello there.") == ""
    p = TurnProgress(heard_text="Earlier part.")
    p.new_attempt()
    p.text("One. Two. ")
    p.voiced("One.")
    p.text("Three.")
    assert p.heard_text == "Earlier part. One."
    assert p.unvoiced_text == "Two. Three."
