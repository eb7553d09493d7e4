"""Every stage's share visible (issue 15): a response's stages in ``response.done``'s
``metadata.voicemesh_stages`` and in ``voicemesh_edge_stage_seconds`` / ``voicemesh_router_stage_seconds``.

Real client event frames into a real session (``edge.testing``). The router and its regions are
stand-ins where they are not under test: a ``ScriptedRouter`` (what the relay makes of the router's
events), or the real router in front of scripted regions on loopback sockets (``router.testing``:
where the router's own stages are timed). Nothing asserts on how long a stage took, only which
stages there are, their order, that they add up, and that the histograms counted them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from openai.types.realtime import ResponseDoneEvent
from prometheus_client import REGISTRY

from edge.responses.stages import EDGE_STAGES, MAX_METADATA_CHARS, METADATA_KEY, TurnStages, read_stages
from edge.shared.settings import EdgeSettings, VadSettings
from edge.testing import (
    Hold,
    ScriptedRouter,
    SessionHarness,
    ToneVoice,
    clause,
    memory_services,
    silence,
    spoken_reply,
    text_reply,
    tone,
)
from router.api import Degraded, FailedOver, Routed, RoutedEvent, SessionRouting
from router.core import Router
from router.registry import Location, Registry
from router.settings import RouterSettings
from router.testing import ScriptedRegion, answer
from wire.turn import TextDelta, TurnAdmitted, TurnDone, TurnStart

TIMINGS = {"queued_s": 0.0, "stt_s": 0.5, "llm_ttft_s": 0.25, "first_audio_s": 1.5, "total_s": 2.0}
"""A region's ``turn.done`` timings (scripted: the relay passes them on as reported)."""
SPOKEN_STAGES = ["eos", "commit", "route", "connect", "queue", "region", "relay", "first_audio"]
EARLY_STAGES = ["eos", "route", "connect", "queue", "region", "relay", "first_audio"]
"""A turn started at a pause in the speech (``edge/realtime/speculation.py``): no ``commit``."""
NOT_EARLY = EdgeSettings(api_keys=("test-key",), vad=VadSettings(speculate_after_ms=0))
EDGE, NEAR, FAR = Location(50.0, 8.0), Location(50.1, 8.1), Location(38.9, -77.4)


def edge_counts() -> dict[str, float]:
    return {s: _count("voicemesh_edge_stage_seconds", s) for s in EDGE_STAGES}


def router_counts() -> dict[str, float]:
    return {s: _count("voicemesh_router_stage_seconds", s) for s in ("choose", "connect", "admission")}


def _count(metric: str, stage: str) -> float:
    return REGISTRY.get_sample_value(f"{metric}_count", {"stage": stage}) or 0.0


def moved(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in before if after[k] != before[k]}


def stages_of(done: dict[str, Any]) -> dict[str, float]:
    """The stages in ``response.done`` (ms by name, in order), checked to add up to ``first_audio``
    (to rounding: each value is rounded to 0.1 ms)."""
    metadata = done["response"]["metadata"]
    assert len(metadata[METADATA_KEY]) <= MAX_METADATA_CHARS
    stages = read_stages(metadata)
    edge = {k: v for k, v in stages.items() if k in EDGE_STAGES and k != "first_audio"}
    assert all(v >= 0 for v in edge.values()), stages
    if "first_audio" in stages:
        assert abs(sum(edge.values()) - stages["first_audio"]) <= 0.1 * len(edge), stages
    return stages


async def spoken_turn(services: Any) -> tuple[SessionHarness, dict[str, Any]]:
    """A spoken turn (server VAD): speech, then silence; the response's ``response.done``."""
    async with SessionHarness(services) as edge:
        await edge.append_audio(silence(0.3) + tone(0.6) + silence(0.8))
        await edge.wait_for("response.done", within_s=60)
    return edge, edge.of_type("response.done")[-1]


def answered() -> list[RoutedEvent]:
    """A region's answer: routed, admitted, one clause, done with its timings."""
    return [
        Routed(region="eu-west"),
        TurnAdmitted(turn_id="t", region="eu-west", queued_s=0.0),
        TextDelta(turn_id="t", delta="Hello there."),
        clause("Hello there."),
        TurnDone(turn_id="t", region="eu-west", status="completed", timings=TIMINGS),
    ]


async def test_a_spoken_turn_has_every_stage_in_order_in_metadata_and_histograms() -> None:
    before = edge_counts()
    edge, done = await spoken_turn(memory_services(ScriptedRouter(answered()), settings=NOT_EARLY))
    stages = stages_of(done)
    region = ["region_queued", "region_stt", "region_llm_ttft", "region_first_audio", "region_total"]
    assert list(stages) == SPOKEN_STAGES + region
    assert [stages[k] for k in region] == [0.0, 500.0, 250.0, 1500.0, 2000.0]  # as the region reported
    # eos is the silence server VAD waits for (500 ms by default), in whole 32 ms VAD chunks.
    assert stages["eos"] == 512.0
    assert moved(before, edge_counts()) == dict.fromkeys(SPOKEN_STAGES, 1.0)
    # The stock client's own model of the event takes it, and the session's other events are intact.
    ResponseDoneEvent.model_validate(done)
    assert edge.of_type("response.output_audio.delta")


async def test_a_turn_started_at_the_pause_has_no_commit_and_still_adds_up() -> None:
    before = edge_counts()
    _, done = await spoken_turn(memory_services(ScriptedRouter(answered())))
    stages = stages_of(done)
    assert [k for k in stages if not k.startswith("region_")] == EARLY_STAGES
    assert stages["eos"] <= 512.0  # the turn left at the pause, inside the silence window
    assert "voicemesh_started_early_ms" in done["response"]["metadata"]
    assert moved(before, edge_counts()) == dict.fromkeys(EARLY_STAGES, 1.0)


async def test_a_failover_before_the_first_audio_is_inside_route_and_the_stages_still_add_up() -> None:
    held = Hold()
    script: list[RoutedEvent | Hold] = [
        Routed(region="eu-west"),
        TurnAdmitted(turn_id="t", region="eu-west"),
        held,  # the first region goes quiet: the router waits on it, then fails over
        FailedOver(from_region="eu-west", to_region="us-east", reason="first_byte_timeout"),
        Routed(region="us-east", attempt=2),
        TurnAdmitted(turn_id="t", region="us-east"),
        TextDelta(turn_id="t", delta="Hi."),
        clause("Hi."),
        TurnDone(turn_id="t", region="us-east", status="completed", timings=TIMINGS),
    ]
    async with SessionHarness(memory_services(ScriptedRouter(script))) as edge:
        await edge.say("Hello?")
        await edge.send({"type": "response.create"})
        await held.reached.wait()
        await asyncio.sleep(0.05)
        held.release()
        await edge.wait_for("response.done", within_s=60)
    done = edge.of_type("response.done")[0]
    stages = stages_of(done)
    # A typed turn: no end of speech; the stages begin as the turn is handed to the router.
    assert [k for k in stages if not k.startswith("region_")] == [
        "route", "connect", "queue", "region", "relay", "first_audio",
    ]  # fmt: skip
    assert stages["route"] >= 50.0  # the failed try (held at least 50 ms) is in the route stage
    assert done["response"]["metadata"]["voicemesh_failed_over_from"] == "eu-west"


async def test_a_degraded_turn_shows_the_wait_for_regions_then_the_edges_own_voice() -> None:
    script: list[RoutedEvent] = [
        Routed(region="eu-west"),
        Degraded(reason="region_disconnected", tried=("eu-west",), failed_region="eu-west"),
    ]
    before = edge_counts()
    _, done = await spoken_turn(memory_services(ScriptedRouter(script), fallback=ToneVoice()))
    assert done["response"]["metadata"]["served_by"] == "edge"
    stages = stages_of(done)
    assert list(stages) == ["eos", "route", "degrade", "fallback", "first_audio"]  # started at the pause
    assert set(moved(before, edge_counts())) == {
        "eos",
        "route",
        "degrade",
        "fallback",
        "first_audio",
    }


async def test_a_cancelled_response_keeps_the_stages_it_reached_and_the_clients_metadata() -> None:
    held = Hold()
    script: list[RoutedEvent | Hold] = [Routed(region="eu-west"), held, *spoken_reply("Never heard.")]
    async with SessionHarness(memory_services(ScriptedRouter(script))) as edge:
        await edge.say("Hello?")
        await edge.send({"type": "response.create", "response": {"metadata": {"client_event_id": "c1"}}})
        await held.reached.wait()
        await edge.send({"type": "response.cancel"})
        await edge.wait_for("response.done", within_s=60)
    done = edge.of_type("response.done")[0]
    assert done["response"]["status"] == "cancelled"
    metadata = done["response"]["metadata"]
    assert metadata["client_event_id"] == "c1"  # LiveKit matches its replies by it
    assert list(stages_of(done)) == ["route"]
    assert all(isinstance(v, str) for v in metadata.values())  # OpenAI's metadata: strings only


async def test_a_text_only_response_ends_its_stages_at_its_first_text() -> None:
    before = edge_counts()
    async with SessionHarness(memory_services(ScriptedRouter(text_reply("Hi", " there.")))) as edge:
        await edge.say("Hello?")
        await edge.send({"type": "response.create", "response": {"output_modalities": ["text"]}})
        await edge.wait_for("response.done", within_s=60)
    assert list(stages_of(edge.of_type("response.done")[0])) == ["route", "region"]
    assert moved(before, edge_counts()) == {"route": 1.0, "region": 1.0}  # no audio: no first_audio


async def test_the_real_router_times_its_stages_for_live_turns_and_not_for_batch_items() -> None:
    async with ScriptedRegion("stages", answer("Hi there.")) as region:
        settings = RouterSettings(location=EDGE, probe_interval_s=0)
        async with Router(settings, registry=Registry(regions=[region.record(NEAR)])) as router:
            edge_before, router_before = edge_counts(), router_counts()
            _, done = await spoken_turn(memory_services(router))
            assert list(stages_of(done)) == EARLY_STAGES  # a scripted region reports no timings
            assert moved(edge_before, edge_counts()) == dict.fromkeys(EARLY_STAGES, 1.0)
            assert moved(router_before, router_counts()) == {"choose": 1.0, "connect": 1.0, "admission": 1.0}
            # A speech batch's item: its waits are not what live callers wait for.
            router_before = router_counts()
            batch = TurnStart(turn_id="b", speak_text="One. Two.", priority="batch")
            async with asyncio.timeout(60):  # only against a hang
                events = [ev async for ev in router.run_turn(SessionRouting("batch"), batch)]
            assert isinstance(events[-1], TurnDone)
            assert moved(router_before, router_counts()) == {}


async def test_metadata_stays_within_openais_limit_whatever_a_region_reports() -> None:
    stages = TurnStages(sent_at=10.0)
    stages.heard_speech(stopped_at=9.9, silence_s=0.512)
    stages.routed(10.001)
    stages.admitted(10.01, queued_s=0.005)
    stages.region_output(11.0)
    stages.audio_sent(11.002)
    stages.region_done({f"a_long_stage_name_number_{i}_s": 1.25 for i in range(40)})
    text = stages.finish(observe=False)
    values = json.loads(text)
    assert len(text) <= MAX_METADATA_CHARS
    assert list(values)[:8] == SPOKEN_STAGES  # region timings are what gets cut, never the edge's
    assert values["first_audio"] == 1614.0 and values["eos"] == 512.0
