"""Every stage's share visible, live (issue 15): a spoken turn from the stock ``openai`` client through
the edge to a real region (Whisper -> vLLM -> Kokoro) carries its whole breakdown in
``response.done``'s metadata, and the ``/metrics`` of the edge (with its router) and of the region
counted it. Nothing asserts on how long a stage took: which stages, their order, that they add up.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from edge.responses.stages import EDGE_STAGES, read_stages
from tests.fixtures.edge import RunningEdge
from tests.fixtures.region import RegionFactory
from voicemesh.realtime import Reply, client, collect_reply, stream_audio
from wire.audio import CLIENT_RATE, FloatAudio

SPOKEN = ["eos", "route", "connect", "queue", "region", "relay", "first_audio"]
"""A spoken turn's stages: started at the pause in the speech (edge/realtime/speculation.py), it has no
``commit`` (that happened while the region worked)."""
REGION = ["queued", "stt", "llm_ttft", "first_clause", "tts_first_audio", "first_audio", "total"]
REGION_METRICS = [
    "voicemesh_region_queued_seconds", "voicemesh_region_stt_seconds", "voicemesh_region_llm_ttft_seconds",
    "voicemesh_region_first_clause_seconds", "voicemesh_region_tts_first_audio_seconds",
    "voicemesh_region_turn_first_audio_seconds", "voicemesh_region_turn_seconds",
]  # fmt: skip


def counts(text: str) -> dict[tuple[str, str], float]:
    """``(histogram, stage label or "")`` -> its observation count, from a ``/metrics`` body."""
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_count"):
                out[(sample.name.removesuffix("_count"), sample.labels.get("stage", ""))] = sample.value
    return out


async def scrape(edge: RunningEdge, region_url: str, headers: dict[str, str]) -> dict[tuple[str, str], float]:
    async with httpx.AsyncClient(timeout=30) as http:
        edge_body = (
            await http.get(f"{edge.http_url}/metrics", headers=headers)
        ).text  # a region token reads it
        region_body = (await http.get(f"{region_url}/metrics", headers=headers)).text
    return counts(edge_body) | counts(region_body)


async def test_a_spoken_turn_shows_every_stage_in_metadata_and_on_every_tiers_metrics(
    edge: RunningEdge, region_factory: RegionFactory, say: Callable[[str], FloatAudio]
) -> None:
    region = region_factory("edge-test", max_concurrent=2, max_queue=4)  # the one behind ``edge``
    before = await scrape(edge, region.url, region.headers())
    question = say("What is the capital of France?")
    async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
        assert (await conn.recv()).type == "session.created"
        await conn.session.update(
            session={"type": "realtime", "instructions": "Answer in one short sentence."}
        )
        assert (await conn.recv()).type == "session.updated"
        await stream_audio(
            conn, np.concatenate([question, np.zeros(CLIENT_RATE, dtype=np.float32)]), pace=1.0
        )
        reply = await collect_reply(conn, Reply(), timeout_s=180)
    after = await scrape(edge, region.url, region.headers())

    assert reply.status == "completed", reply.types
    assert reply.metadata["voicemesh_region"] == "edge-test"
    stages = read_stages(reply.metadata)  # as the stock SDK parsed response.done
    assert [name for name in stages if not name.startswith("region_")] == SPOKEN, stages
    assert 0 <= float(reply.metadata["voicemesh_started_early_ms"]) <= 1000, reply.metadata
    assert {"region_" + name for name in REGION} <= set(stages), stages  # as the region reported them
    edge_stages = [stages[name] for name in SPOKEN[:-1]]
    assert all(v >= 0 for v in stages.values()), stages
    assert abs(sum(edge_stages) - stages["first_audio"]) <= 0.1 * len(edge_stages), stages
    # The region's own span (admission to its first audio sent) lies inside the edge's, from the
    # region chosen to its first clause received (0.3 ms: both sides round).
    assert stages["connect"] + stages["queue"] + stages["region"] >= stages["region_first_audio"] - 0.3
    # The turn went to the router at the pause: before the end of the turn was called (eos < the
    # silence window, 512 ms), and the region answered from there.
    assert stages["eos"] < 512, stages

    grew = {key for key in after if after[key] > before.get(key, 0.0)}
    assert {("voicemesh_edge_stage_seconds", s) for s in SPOKEN} <= grew, sorted(grew)
    assert {("voicemesh_router_stage_seconds", s) for s in ("choose", "connect", "admission")} <= grew
    assert {(name, "") for name in REGION_METRICS} <= grew
    assert set(SPOKEN) <= set(EDGE_STAGES)
