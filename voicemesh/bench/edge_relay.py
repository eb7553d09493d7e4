"""The edge bench's relay overhead: the same text turns against a real region, directly
(``wire.client``) and through an in-process edge (stock ``openai`` client): the edge's own time per
relayed audio chunk, and time to first audio side by side."""

from __future__ import annotations

import time
from dataclasses import replace

from edge.shared.settings import EdgeSettings
from voicemesh.bench.e2e_report import percentile
from voicemesh.bench.edge_process import Report
from voicemesh.processes import free_port
from voicemesh.realtime import Reply, collect_reply, session_config
from voicemesh.realtime import connect as realtime_connect


async def bench_relay(
    settings: EdgeSettings, region_url: str, turns: int, report: Report
) -> dict[str, float]:
    from edge.app.server import EdgeTask
    from router.core import Router
    from router.registry import RegionRecord, Registry
    from router.settings import RouterSettings
    from wire.client import RegionConnection, collect_turn
    from wire.turn import TurnStart

    prompt = "Name three colours of the rainbow."
    port = free_port()
    settings = replace(settings, port=port)
    router = Router(
        RouterSettings(stall_floor_s=10, first_audio_floor_s=20),
        registry=Registry(regions=[RegionRecord(id="bench", url=region_url)]),
    )
    await router.start()
    server = await EdgeTask.start(settings, router, relay_timing=True)
    direct_ttfa: list[float] = []
    edge_ttfa: list[float] = []
    try:
        conn = await RegionConnection.open(region_url, region="bench")
        for i in range(turns):
            start = TurnStart(turn_id=f"direct-{i}", text=prompt, max_output_tokens=40, temperature=0.0)
            res = await collect_turn(conn, start)
            if res.first_audio_s is not None:
                direct_ttfa.append(res.first_audio_s)
            async with realtime_connect(f"ws://127.0.0.1:{port}/v1", settings.api_keys[0], model="b") as rt:
                await rt.recv()
                await rt.session.update(session=session_config(max_output_tokens=40))  # type: ignore[arg-type]
                await rt.conversation.item.create(
                    item={
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": prompt}],
                    }
                )
                t0 = time.monotonic()
                await rt.response.create()
                reply = await collect_reply(rt, Reply(), started_at=t0)
                if reply.first_audio_s is not None:
                    edge_ttfa.append(reply.first_audio_s)
            report(f"relay: turn {i + 1}/{turns}")
        await conn.close()
    finally:
        await server.aclose()
    relay = server.services.relay_times or []
    return {
        "chunks": float(len(relay)),
        "relay_p50_ms": percentile(relay, 50) * 1000,
        "relay_p99_ms": percentile(relay, 99) * 1000,
        "direct_ttfa_p50_ms": percentile(direct_ttfa, 50) * 1000,
        "edge_ttfa_p50_ms": percentile(edge_ttfa, 50) * 1000,
    }
