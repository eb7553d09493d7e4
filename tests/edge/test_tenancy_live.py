"""Issue 17's "what must show", end to end: two keys, one EU-only and one unrestricted, two real
regions (Whisper -> vLLM -> Kokoro; one tagged ``eu`` and near, one tagged ``us`` and far), real
edges sharing a real Redis, the stock openai client. The EU region is SIGKILLed mid-answer (when
the answer's first audio reaches the client) in three turns:

* the unrestricted key's turn fails over to the US region and completes there;
* the EU key's turn (``on_no_region: edge_voice``) is never served by the US region: the edge's
  own voice (Piper) says the rest;
* the EU key's turn with ``on_no_region: error``: an ``error`` event (``no_region_in_residency``),
  ``response.done`` failed, and no audio but the EU region's (what it had sent plays out).

Each turn runs on its own edge (a fresh router: no breaker or health left over from the last kill)
and the killed region is started again in between. The audit trail, read through another edge's
admin endpoint (the books are shared in Redis), shows each turn with its regions and failovers, and
each key's usage moved, on ``/usage`` and on the serving edge's ``/metrics``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import httpx
import jwt

from edge.shared.metrics import key_label
from router.registry import Location, RegionRecord
from tests.edge.conftest import session_id
from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RegionFactory, RunningRegion
from tests.router.conftest import CRASH_REASONS
from voicemesh.realtime import client, delta_seconds

JWT_SECRET = "jwt-secret-for-the-tenancy-live-test-0123456789"
ADMIN = "admin-key-tenancy-live-0123"
TURN_TIMEOUT_S = 180.0
BOOKING_TIMEOUT_S = 30.0
QUESTION = "Tell me a long story about a lighthouse keeper and his cat, in at least six sentences."
NEAR, FAR = Location(0.1, 0.1), Location(40.7, -74.0)  # the edges' router sits at (0, 0)


def token(sub: str, **claims: object) -> str:
    return jwt.encode({"sub": sub, "exp": int(time.time()) + 3600, **claims}, JWT_SECRET, algorithm="HS256")


async def edge_before(
    edge_factory: EdgeFactory, redis_url: str, eu: RunningRegion, us: RunningRegion
) -> RunningEdge:
    records = [
        RegionRecord(id=eu.id, url=eu.url, location=NEAR, residency=["eu"], capacity=2),
        RegionRecord(id=us.id, url=us.url, location=FAR, residency=["us"], capacity=2),
    ]
    # Redis on a machine this test loads with two regions and vLLM: a call slower than the default
    # 0.5 s would keep an audit record on its own edge (by design), and the read through another
    # edge is what this test checks.
    return await edge_factory(
        records, store_url=redis_url, jwt_secret=JWT_SECRET, admin_keys=(ADMIN,), redis_timeout_s=3.0
    )


async def turn_killing(edge: RunningEdge, tok: str, eu: RunningRegion) -> tuple[Any, list[Any]]:
    """One typed turn; the EU region is SIGKILLed when the answer's first audio reaches the client
    (it was routed there first: the test fails otherwise). Returns ``session.created`` and every
    event up to ``response.done``, with a ``killed`` marker event index in between."""
    seen: list[Any] = []
    async with client(edge.url, tok).realtime.connect(model="m") as conn:
        created = await conn.recv()
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}]}
        await conn.conversation.item.create(item=item)
        await conn.response.create(response={"max_output_tokens": 200})
        routed: list[str] = []
        async with asyncio.timeout(TURN_TIMEOUT_S):
            async for event in conn:
                seen.append(event)
                if event.type == "voicemesh.turn.routed":
                    routed.append((event.model_extra or {})["region"])
                elif event.type == "response.output_audio.delta" and eu.alive:
                    assert routed == [eu.id], f"the turn did not start on the EU region: {routed}"
                    os.kill(eu.pid, signal.SIGKILL)
                    eu.process.wait()
                    seen.append("killed")
                elif event.type == "response.done":
                    break
    assert "killed" in seen, [getattr(e, "type", e) for e in seen]
    return created, seen


def heard_s(seen: list[Any]) -> float:
    """Seconds of audio the client got."""
    return sum(
        delta_seconds(e.delta) for e in seen if getattr(e, "type", "") == "response.output_audio.delta"
    )


async def admin_get(edge: RunningEdge, path: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=edge.http_url, timeout=30) as http:
        reply = await http.get(path, headers={"Authorization": f"Bearer {ADMIN}"})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


async def booked(reader: RunningEdge, key_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The key's one audit record and its usage, read through ``reader``. The serving edge books a
    turn in a task of its own as ``response.done`` goes out, so the books may be written just after
    the client read it: wait for them (bounded; books that never land fail here)."""
    turns: list[dict[str, Any]] = []
    usage: dict[str, Any] = {}
    try:
        async with asyncio.timeout(BOOKING_TIMEOUT_S):
            while True:
                turns = (await admin_get(reader, f"/v1/keys/{key_id}/audit?limit=5"))["turns"]
                usage = (await admin_get(reader, f"/v1/keys/{key_id}/usage"))["usage"]
                if turns and usage.get("turns"):
                    break
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(
            f"{key_id}'s books never reached the reader: audit {turns}, usage {usage}"
        ) from None
    assert len(turns) == 1, turns
    return turns[0], usage


def metric(text: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))  # as prometheus_client writes them
    for line in text.splitlines():
        if line.startswith(f"{name}{{{want}}} "):
            return float(line.split()[-1])
    return 0.0


async def test_an_eu_region_killed_mid_answer_never_sends_an_eu_keys_turn_to_the_us(
    edge_factory: EdgeFactory, region_factory: RegionFactory, redis_url: str
) -> None:
    us = region_factory("tenancy-us")
    runs: dict[str, tuple[RunningEdge, Any, list[Any]]] = {}
    for name, tok in [
        ("live-anywhere", token("live-anywhere")),
        ("live-eu-voice", token("live-eu-voice", residency=["eu"])),
        ("live-eu-error", token("live-eu-error", residency=["eu"], on_no_region="error")),
    ]:
        # Started again after the last case's kill, in a thread: the wait for it to be ready must
        # not stop this event loop, which runs the last case's edge and its booking (stopped for
        # that long, its Redis calls time out and the books wait on that edge for a retry).
        eu = await asyncio.to_thread(region_factory, "tenancy-eu")
        edge = await edge_before(edge_factory, redis_url, eu, us)
        created, seen = await turn_killing(edge, tok, eu)
        runs[name] = (edge, created, seen)
        types = [getattr(e, "type", e) for e in seen]
        print(f"{name}: {types.count('response.output_audio.delta')} audio deltas; {types[-1]}")

    # The unrestricted key: failed over to the US region, and completed there.
    _, _, seen = runs["live-anywhere"]
    done = seen[-1].response
    moved = [e for e in seen if getattr(e, "type", "") == "voicemesh.turn.failed_over"]
    assert [(m.model_extra["from_region"], m.model_extra["to_region"]) for m in moved] == [
        ("tenancy-eu", "tenancy-us")
    ]
    assert done.status == "completed" and done.metadata["voicemesh_region"] == "tenancy-us"

    # The EU key, edge voice: degraded to Piper; the US region was never asked.
    _, created, seen = runs["live-eu-voice"]
    done = seen[-1].response
    assert created.session.model_extra["voicemesh"]["residency"] == ["eu"]
    assert not [e for e in seen if getattr(e, "type", "") == "voicemesh.turn.failed_over"]
    assert done.status == "completed" and done.metadata["served_by"] == "edge"
    assert "voicemesh_region" not in done.metadata

    # The EU key, error: a clear error, a failed response, and no audio after the kill.
    _, _, seen = runs["live-eu-error"]
    done = seen[-1].response
    errors = [e for e in seen if getattr(e, "type", "") == "error"]
    assert len(errors) == 1, [getattr(e, "type", e) for e in seen]
    error = errors[0]
    assert error.error.code == "no_region_in_residency"
    assert done.status == "failed" and done.status_details.error.code == "no_region_in_residency"
    assert "served_by" not in (done.metadata or {})

    # The audit trail, read on another edge than the one that served each turn.
    reader = runs["live-eu-error"][0]
    expected = {
        "live-anywhere": (["tenancy-eu", "tenancy-us"], "tenancy-us", "completed", ""),
        "live-eu-voice": (["tenancy-eu"], "edge", "degraded", "no_region_available"),
        "live-eu-error": (["tenancy-eu"], "none", "failed", "no_region_in_residency"),
    }
    for name, (regions, to, outcome, reason) in expected.items():
        edge, created, seen = runs[name]
        if edge is reader:
            reader = runs["live-anywhere"][0]
        turn, usage = await booked(reader, f"jwt_{name}")
        assert turn["response_id"] == seen[-1].response.id and turn["session_id"] == session_id(created)
        assert turn["regions"] == regions, turn
        assert len(turn["failovers"]) == 1, turn
        hop = turn["failovers"][0]
        assert hop["from"] == "tenancy-eu" and hop["to"] == to and hop["reason"] in CRASH_REASONS, turn
        assert (turn["outcome"], turn["reason"]) == (outcome, reason), turn
        assert usage["turns"] == 1 and usage["audio_out_s"] > 0 and usage["input_tokens"] > 0, usage
        # Region audio only, and the client got all of it; plus the edge's own voice when it spoke.
        if name == "live-eu-voice":
            assert heard_s(seen) > usage["audio_out_s"] + 0.2, (heard_s(seen), usage)
        else:
            assert abs(heard_s(seen) - usage["audio_out_s"]) < 0.05, (heard_s(seen), usage)
        async with httpx.AsyncClient(base_url=edge.http_url, timeout=30) as http:
            text = (await http.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"})).text
        assert (
            metric(text, "voicemesh_edge_key_turns_total", key=key_label(f"jwt_{name}"), outcome=outcome) == 1
        )
        assert (
            metric(
                text, "voicemesh_edge_key_audio_seconds_total", key=key_label(f"jwt_{name}"), direction="out"
            )
            > 0
        )
        print(f"{name}: {turn}\n  usage {usage}")
