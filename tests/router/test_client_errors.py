"""A turn the region refuses as the client's fault is never failed over and never counted by a
breaker, decided by the error's class (``wire.errors``), not by a list of codes.

Fast tier: scripted stand-in regions (``router.testing``) speak the real turn protocol on loopback,
the router is the real one; no model is under test. The same with real regions is in
``test_client_errors_live.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from router.api import ClientRefused, SessionRouting
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from router.testing import Admit, Fail, Hear, ScriptedRegion, Step, answer
from tests.router.conftest import EDGE, FAR, NEAR, Seen, collect
from wire.errors import (
    ERRORS_BY_CODE,
    LlmRefused,
    ProtocolError,
    RegionError,
    TextTooLong,
    VoicemeshError,
    decode_error,
)
from wire.turn import TurnStart

GUARD_S = 60.0
"""Only against a hang."""

PROTOCOL_CODES = sorted(code for code, cls in ERRORS_BY_CODE.items() if issubclass(cls, ProtocolError))


def test_every_error_class_is_found_by_its_code() -> None:
    def tree(cls: type[VoicemeshError]) -> list[type[VoicemeshError]]:
        return [cls, *(c for sub in cls.__subclasses__() for c in tree(sub))]

    wire_classes = [c for c in tree(VoicemeshError) if c.__module__ == "wire.errors"]
    assert {c.code: c for c in wire_classes} == dict(ERRORS_BY_CODE)
    assert {"text_too_long", "llm_refused", "unknown_voice", "history_too_long"} <= set(PROTOCOL_CODES)


@pytest.mark.parametrize("code", PROTOCOL_CODES)
def test_a_request_error_code_decodes_to_its_protocol_error_class(code: str) -> None:
    err = decode_error(code, "why", region="eu")
    assert type(err) is ERRORS_BY_CODE[code] and isinstance(err, ProtocolError)
    assert err.code == code and err.message == "why"


@pytest.mark.parametrize(
    "code", ["model_error", "llm_error", "tts_failed", "region_error", "busy", "whatever"]
)
def test_any_other_code_is_the_regions_failure(code: str) -> None:
    err = decode_error(code, "why", region="eu")
    assert type(err) is RegionError and err.code == code and err.region == "eu"


def test_the_classes_say_whose_fault_it_is() -> None:
    assert issubclass(TextTooLong, ProtocolError) and TextTooLong.code == "text_too_long"
    assert issubclass(LlmRefused, ProtocolError)


def settings() -> RouterSettings:
    return RouterSettings(location=EDGE, probe_interval_s=0, breaker_fail_max=2)


async def run(router: Router, session: str, start: TurnStart) -> Seen:
    async with asyncio.timeout(GUARD_S):
        return await collect(router.run_turn(SessionRouting(session), start))


def refuses_long_text(start: TurnStart) -> Sequence[Step]:
    """Like a real region: a text over 4,000 characters is refused, anything else answered."""
    if start.text is not None and len(start.text) > 4000:
        return [Fail("text_too_long", f"text has {len(start.text)} characters; the limit is 4000")]
    return answer("Served.")(start)


@pytest.mark.parametrize("code", PROTOCOL_CODES)
async def test_a_client_error_is_refused_once_without_failover_or_breaker_count(code: str) -> None:
    async with (
        ScriptedRegion("first", lambda _s: [Admit(), Hear(), Fail(code, "the request is wrong")]) as first,
        ScriptedRegion("second", answer("Hi.")) as second,
    ):
        registry = Registry(regions=[first.record(NEAR), second.record(FAR)])
        async with Router(settings(), registry=registry) as router:
            for i in range(3):  # more than breaker_fail_max
                seen = await run(router, "s", TurnStart(turn_id=f"t{i}", text="hi"))
                assert seen.routed == [first.id] and not seen.failovers and seen.degraded is None
                refused = seen.events[-1][1]
                assert refused == ClientRefused(code=code, message="the request is wrong")
            assert router.breakers.status(first.id)["fail_counter"] == 0
            assert router.breakers.known_state(first.id) == "closed"
            assert not router.failovers.as_json() and router.degraded_count == 0
    assert not second.starts


async def test_three_over_long_texts_leave_every_breaker_closed_and_others_served() -> None:
    """The issue's case: three 4,001-character messages once opened every region's breaker."""
    async with (
        ScriptedRegion("a", refuses_long_text) as a,
        ScriptedRegion("b", refuses_long_text) as b,
        ScriptedRegion("c", refuses_long_text) as c,
    ):
        registry = Registry(regions=[a.record(NEAR), b.record(FAR), c.record(FAR)])
        async with Router(settings(), registry=registry) as router:
            for i in range(3):
                seen = await run(router, "bad", TurnStart(turn_id=f"bad{i}", text="x" * 4001))
                assert isinstance(seen.events[-1][1], ClientRefused) and len(seen.routed) == 1
                other = await run(router, "good", TurnStart(turn_id=f"good{i}", text="hi"))
                assert other.done is not None and other.degraded is None
            for region in (a, b, c):
                assert router.breakers.known_state(region.id) == "closed"
                assert router.breakers.status(region.id)["fail_counter"] == 0
