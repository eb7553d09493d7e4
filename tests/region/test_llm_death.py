"""The region's LLM dying is the region's fault: a turn in flight fails with a region error (the
router fails over), ``/health`` says ``llm_down`` with the reason while it is gone, and the region is
ready again, warm, once it is back.

The LLM here is ``DyingLlm`` (tests/region/dying_llm.py), a real HTTP server in its own process on
loopback, SIGKILLed mid-answer: these tests are about what the region makes of the process's death
(the transport failures httpx raises), not about the model. The real vLLM's death is the
``llm-crash`` drill's (tests/drills/test_llm_crash_drill.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from region.llm import VllmClient
from region.llm_watch import LlmWatch
from region.protocols import LlmError, LlmUnreachable
from region.settings import LlmSettings
from region.testing import ScriptedLlm, standin_node
from router.health import HealthReport, RegionHealth
from router.registry import Location, RegionRecord
from router.settings import RouterSettings
from tests.region.dying_llm import DyingLlm
from voicemesh.processes import free_port
from wire.errors import ProtocolError, RegionError, decode_error
from wire.turn import TurnStart


@pytest.fixture
def dying(tmp_path: Path) -> Iterator[DyingLlm]:
    llm = DyingLlm(tmp_path, free_port())
    llm.start()
    yield llm
    llm.kill()


def _client(llm: DyingLlm) -> VllmClient:
    return VllmClient(LlmSettings(model="stand-in", served_name=llm.name), llm.url, system_prompt="Be brief.")


async def test_an_answer_cut_by_the_llms_death_is_a_region_error(dying: DyingLlm) -> None:
    client = _client(dying)
    heard: list[str] = []
    try:
        with pytest.raises(LlmError) as caught:
            async for piece in client.stream(TurnStart(turn_id="t1"), "Tell me a story."):
                assert isinstance(piece, str)
                heard.append(piece)
                if len(heard) == dying.chunks:
                    dying.kill()  # SIGKILL while the answer is being written
    finally:
        await client.aclose()
    exc = caught.value
    assert "".join(heard).strip() == "word0 word1 word2"  # what was heard before the death got through
    assert not isinstance(exc, LlmUnreachable) and "mid-stream" in exc.message
    # The router reads it by its code as the region's failure, never the client's: it fails over.
    decoded = decode_error(exc.code, exc.message, region="eu-west")
    assert isinstance(decoded, RegionError) and not isinstance(decoded, ProtocolError)
    assert decoded.code == "llm_error"


async def test_a_dead_llm_is_unreachable_and_a_new_turn_fails_as_the_regions(dying: DyingLlm) -> None:
    client = _client(dying)
    try:
        await client.check()  # alive: answers its model list
        dying.kill()
        with pytest.raises(LlmUnreachable, match="connection refused"):
            await client.check()
        with pytest.raises(LlmUnreachable) as caught:
            async for _ in client.stream(TurnStart(turn_id="t2"), "Hello?"):
                pass
    finally:
        await client.aclose()
    decoded = decode_error(caught.value.code, caught.value.message)
    assert isinstance(decoded, RegionError) and decoded.code == "llm_unreachable"


async def test_the_watch_marks_the_region_not_ready_until_the_llm_is_back(dying: DyingLlm) -> None:
    client = _client(dying)
    node = standin_node(llm=client)
    lines: list[str] = []
    watch = LlmWatch(client, interval_s=0.05, misses=3, region="stand-in", report=lines.append)
    node.llm_watch = watch
    try:
        await node.warm_up()
        await watch.tick()
        assert node.health()[0] == 200
        dying.kill()
        await watch.tick()  # a refused connection: down at once, not after ``misses``
        status, body = node.health()
        assert (status, body["status"], body["models"]["llm"]) == (503, "llm_down", False)
        assert (
            body["error"].startswith("the LLM does not answer: LLM at ")
            and "connection refused" in body["error"]
        )
        dying.start()  # what the local supervisor does: the same command on the same port
        await watch.tick()
        assert node.health()[0] == 200 and watch.down is None
    finally:
        await client.aclose()
    assert lines[0].startswith("region stand-in: LLM down, not ready until it is back")
    assert lines[1].startswith("region stand-in: LLM at ") and lines[1].endswith("; ready")


async def test_a_slow_check_counts_only_after_misses_in_a_row() -> None:
    class Slow(ScriptedLlm):
        failing = 0

        async def check(self) -> None:
            if self.failing:
                self.failing -= 1
                raise LlmError("timed out")

    llm = Slow()
    watch = LlmWatch(llm, interval_s=0.01, misses=3, region="r")
    llm.failing = 2
    await watch.tick()
    await watch.tick()
    assert watch.down is None  # two late answers: a busy server, not a dead one
    await watch.tick()
    assert watch.down is None  # and its answer resets the count
    llm.failing = 3
    for _ in range(3):
        await watch.tick()
    assert watch.down == "timed out"
    task = asyncio.create_task(watch.run())
    for _ in range(100):
        if watch.down is None:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    assert watch.down is None


async def test_the_router_reads_llm_down_as_not_ready_with_its_reason() -> None:
    """The body a region with a dead LLM serves, decoded as the router's prober decodes it."""
    llm = ScriptedLlm()
    node = standin_node(llm=llm)
    await node.warm_up()
    llm.reachable = False
    await node.llm_watch.tick()
    status, body = node.health()
    report = msgspec.json.decode(json.dumps(body).encode(), type=HealthReport)
    region = RegionHealth(
        RegionRecord(id="eu-west", url="http://127.0.0.1:1", location=Location(lat=50.1, lon=8.7)),
        RouterSettings(),
    )
    region.observe_probe(report, 0.001)
    assert status == 503 and not report.ready and not region.reachable
    assert region.status()["region_status"] == "llm_down"
    assert (
        region.status()["region_error"]
        == "the LLM does not answer: LLM at memory://scripted-llm is unreachable (set by the test)"
    )
