"""One trace per spoken turn across every tier, end to end, exported over OTLP/HTTP: a real edge process
(``voicemesh edge serve``, its router inside), two real region processes and the run's vLLM, all
configured by the standard ``OTEL_*`` variables and pointed at the test's own receiver
(``tests/fixtures/otlp.py``: no collector ships for this machine). The serving region is SIGKILLed as
its first audio reaches the client; the trace must hold the edge's turn, the router's attempt at each
region and its failover (with the length of what was heard), both regions' spans, and vLLM's own.

A killed region's unfinished spans die with it: what it had finished and exported (its queue wait,
ended at admission, long before its first audio) is what shows it in the trace.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.common import SpeechFactory, free_port
from tests.fixtures.edge import serve_edge
from tests.fixtures.otlp import OtlpReceiver, ReceivedSpan
from tests.fixtures.region import RegionFactory, RunningRegion
from voicemesh.processes import stop
from voicemesh.realtime import connect, session_config, stream_audio
from wire.audio import CLIENT_RATE, read_wav

KEY = "vm-traces-live-key"
TURN_TIMEOUT_S = 240.0


@pytest.fixture
def traced_stack(
    tmp_path: Path,
    region_factory: RegionFactory,
    region_keys: Path,
    redis_url: str,
    otlp_receiver: OtlpReceiver,
) -> Iterator[tuple[str, dict[str, RunningRegion]]]:
    env = otlp_receiver.env()
    regions = {r.id: r for r in (region_factory("trace-a", env=env), region_factory("trace-b", env=env))}
    port = free_port()
    proc = serve_edge(
        port, list(regions.values()), region_keys, redis_url, tmp_path / "edge.log",
        env={"VOICEMESH_API_KEY": KEY, "VOICEMESH_SPECULATE_MS": "0", **env},
    )  # fmt: skip
    try:
        yield f"ws://127.0.0.1:{port}/v1", regions
    finally:
        stop(proc, grace_s=10)  # a clean stop flushes the edge's last spans


async def test_a_failover_turn_is_one_trace_across_edge_router_regions_and_vllm(
    traced_stack: tuple[str, dict[str, RunningRegion]], otlp_receiver: OtlpReceiver, speech: SpeechFactory
) -> None:
    url, regions = traced_stack
    samples, rate = read_wav(speech("Tell me about Paris in three sentences.", rate=CLIENT_RATE))
    assert rate == CLIENT_RATE
    audio = np.concatenate([samples, np.zeros(CLIENT_RATE, dtype=np.float32)])  # silence ends the turn
    killed = ""
    routed: list[str] = []
    events: list[Any] = []
    async with connect(url, KEY, max_retries=0) as conn:
        assert (await conn.recv()).type == "session.created"
        await conn.session.update(session=session_config(max_output_tokens=60))
        sender = asyncio.create_task(stream_audio(conn, audio))
        async with asyncio.timeout(TURN_TIMEOUT_S):
            async for event in conn:
                events.append(event)
                if event.type == "voicemesh.turn.routed":
                    routed.append((event.model_extra or {})["region"])
                if event.type == "response.output_audio.delta" and not killed:
                    killed = routed[-1]
                    os.kill(regions[killed].pid, signal.SIGKILL)  # its first clause is out: mid-answer
                if event.type == "response.done":
                    break
        await sender
    types = [e.type for e in events]
    assert killed and any(t == "voicemesh.turn.failed_over" for t in types), types
    survivor = next(r for r in regions if r != killed)

    def failover_trace() -> list[ReceivedSpan]:
        ids = {s.trace_id for s in otlp_receiver.spans if s.name == "router.failover"}
        return otlp_receiver.trace(ids.pop()) if len(ids) == 1 else []

    def complete() -> bool:
        names = {s.name for s in failover_trace()}
        return {"edge.turn", "router.turn", "region.turn", "llm_request"} <= names

    complete_in_time = otlp_receiver.wait_for(complete, timeout_s=60)
    spans = failover_trace()
    summary = sorted((s.service, s.scope, s.name, s.attributes.get("voicemesh.region", "")) for s in spans)
    print(f"killed {killed}, survivor {survivor}; trace of {len(spans)} spans:", *summary, sep="\n  ")
    assert complete_in_time, summary
    by_name: dict[str, list[ReceivedSpan]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    # The edge's turn is the root; the router's spans are in the edge's process, under its own scope.
    [root] = by_name["edge.turn"]
    assert root.parent_id == "" and root.service == "voicemesh-edge"
    assert {s.scope for s in by_name["router.turn"]} == {"voicemesh.router"}
    attempts = {s.attributes["voicemesh.region"]: s for s in by_name["router.attempt"]}
    assert set(attempts) == {killed, survivor}
    assert attempts[survivor].attributes["voicemesh.attempt.outcome"] == "completed"
    assert attempts[killed].attributes["voicemesh.attempt.outcome"] != "completed"  # why it was left
    [failover] = by_name["router.failover"]
    assert failover.attributes["voicemesh.failover.from"] == killed
    assert failover.attributes["voicemesh.heard_text.length"] > 0
    # Both regions, told apart by service.instance.id, each under the router's attempt at it.
    region_spans = [s for s in spans if s.service == "voicemesh-region"]
    assert {s.resource["service.instance.id"] for s in region_spans} == {killed, survivor}
    [finished] = by_name["region.turn"]  # the killed region's turn never ended
    assert finished.resource["service.instance.id"] == survivor
    assert finished.parent_id == attempts[survivor].span_id
    assert {"llm_ttft_s", "first_clause_s", "tts_first_audio_s"} <= set(finished.events)
    # vLLM's own span, a child of the survivor's chat request (GenAI conventions).
    chats = {s.span_id: s for s in by_name["chat smollm2-135m-instruct"]}
    assert any(c.attributes["gen_ai.request.model"] == "smollm2-135m-instruct" for c in chats.values())
    vllm = by_name["llm_request"]
    assert all(s.service == "vllm" for s in vllm) and any(s.parent_id in chats for s in vllm)
