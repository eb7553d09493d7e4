"""The edge's logs and its recent turns (issue 33): a session's records carry its session, turn and
response ids; uvicorn's access log is on, in the process's format, with no key in it; ``/status``
gives the ops page each recent turn's stages, read back from what ``response.done`` carried.

Real client event frames into a real session (``edge.testing``), a real uvicorn on loopback for the
access log; the router is a stand-in (``ScriptedRouter``: the turns are scripted, not under test).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient

from edge.app.asgi import create_app
from edge.app.server import EdgeTask
from edge.responses.stages import read_stages
from edge.shared.settings import EdgeSettings
from edge.testing import ScriptedRouter, SessionHarness, clause, memory_services, silence, tone
from router.api import FailedOver, Routed, RoutedEvent
from tests.fixtures.common import free_port
from wire import log_context
from wire.turn import TextDelta, TurnAdmitted, TurnDone

KEY, ADMIN = "caller-key-0123456789", "admin-key-0123456789"
SETTINGS = EdgeSettings(api_keys=(KEY,), admin_keys=(ADMIN,))
TIMINGS = {"queued_s": 0.0, "llm_ttft_s": 0.25, "first_clause_s": 0.4, "first_audio_s": 0.9}


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """Every record at INFO and above, as the JSON lines ``--log-format json`` writes."""
    out = io.StringIO()
    root = logging.getLogger()
    h = log_context.handler("json", out)
    level = root.level
    root.addHandler(h)
    root.setLevel(logging.INFO)
    yield out
    root.removeHandler(h)
    root.setLevel(level)


def records(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def failed_over_turn() -> list[RoutedEvent]:
    """eu-west is chosen, admits the turn, then is left for us-east, which answers."""
    first, second = "eu-west", "us-east"
    hop = FailedOver(from_region=first, to_region=second, reason="first_byte_timeout")
    answer: list[RoutedEvent] = [TextDelta(turn_id="t", delta="Hi."), clause("Hi.")]
    done = TurnDone(turn_id="t", region=second, status="completed", timings=TIMINGS)
    tries: list[list[RoutedEvent]] = [
        [Routed(region=r, attempt=n), TurnAdmitted(turn_id="t", region=r)]
        for n, r in ((1, first), (2, second))
    ]
    return [*tries[0], hop, *tries[1], *answer, done]


async def test_a_spoken_turns_log_lines_carry_its_session_turn_and_response(logs: io.StringIO) -> None:
    router = ScriptedRouter(failed_over_turn())
    services = memory_services(router, settings=SETTINGS)
    async with SessionHarness(services) as edge:
        await edge.append_audio(silence(0.3) + tone(0.6) + silence(0.8))
        await edge.wait_for("response.done", within_s=60)
    done = edge.of_type("response.done")[-1]["response"]
    (line,) = [r for r in records(logs) if r["message"].startswith(f"response {done['id']}")]
    assert line["message"] == f"response {done['id']} completed, served by us-east"
    assert line["session_id"] == edge.state.id
    assert line["response_id"] == done["id"]
    assert line["turn_id"] in {t.start.turn_id for t in router.turns}  # the id the router and region log
    (turn,) = services.recent_turns.list()
    assert turn["turn_id"] == line["turn_id"]


def test_status_gives_each_recent_turns_stages_and_failovers_as_response_done_had_them() -> None:
    services = memory_services(ScriptedRouter(failed_over_turn()), settings=SETTINGS)

    async def one_turn() -> dict[str, Any]:
        async with SessionHarness(services) as edge:
            await edge.say("Hello?")
            await edge.send({"type": "response.create"})
            await edge.wait_for("response.done", within_s=60)
        return dict(edge.of_type("response.done")[-1]["response"])

    done = asyncio.run(one_turn())
    with TestClient(create_app(services)) as http:
        assert http.get("/status", headers={"Authorization": f"Bearer {KEY}"}).status_code == 403
        status = http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
    assert status.status_code == 200, status.text
    (turn,) = status.json()["edge"]["turns"]
    assert turn["response_id"] == done["id"] and turn["status"] == "completed"
    # One source: the stages are those response.done carried, in their order.
    assert turn["stages_ms"] == read_stages(done["metadata"])
    assert list(turn["stages_ms"])[:4] == ["route", "connect", "queue", "region"]
    assert turn["stages_ms"]["region_llm_ttft"] == 250.0
    assert (turn["region"], turn["failed_over_from"]) == ("us-east", "eu-west")
    (hop,) = turn["failovers"]
    assert (hop["from"], hop["to"], hop["reason"]) == ("eu-west", "us-east", "first_byte_timeout")
    assert 0.0 <= hop["at_ms"] <= turn["stages_ms"]["first_audio"]


async def test_the_access_log_is_on_and_keeps_no_key(logs: io.StringIO) -> None:
    settings = EdgeSettings(api_keys=(KEY,), admin_keys=(ADMIN,), port=free_port())
    services = memory_services(settings=settings)
    edge = await EdgeTask.start(settings, services.router, services=services)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.port}") as http:
            assert (await http.get("/health")).status_code == 200  # a probe: not logged
            assert (await http.get("/v1/models", params={"api_key": KEY})).status_code == 401
            status = await http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
            assert status.status_code == 200
    finally:
        await edge.aclose()
    access = [r for r in records(logs) if r["logger"] == "uvicorn.access"]
    paths = [r["message"].split('"')[1] for r in access]
    assert paths == ["GET /v1/models?api_key=*** HTTP/1.1", "GET /status HTTP/1.1"], access
    assert access[0]["message"].endswith(" 401")
    assert KEY not in logs.getvalue() and ADMIN not in logs.getvalue()
