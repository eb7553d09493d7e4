"""``voicemesh bench edge``: what one edge process holds, and what it adds to each audio chunk.

1. Idle sessions: open N Realtime sessions against an edge subprocess; its resident memory before
   and after gives memory per session; a sample of sessions must still answer.
2. Active streams: N sessions stream audio at real time (40 ms appends, speech and silence) into an
   edge pinned to one core; its CPU time until the backlog is served, per second of audio, gives
   streams per core, and the time for a ``clear`` to come back after the window shows whether it
   kept up (then one core holds N streams). A stream costs less at full load (full VAD batches,
   more frames per wake-up), and an edge that keeps up spends its spare CPU on smaller batches: so
   at 40 ms a third more streams again, overloading the core, give its capacity (stream-seconds per
   CPU-second at full load). At 40 ms, the N streams again with turn detection off, and Silero
   timed alone at the batch the edge ran, split the CPU per stream-second into transport, Silero,
   and the rest of VAD (batching, turns).
3. Relay overhead: the same text turns against a real region, directly (``wire.client``) and
   through the edge (stock ``openai`` client); the edge's own time per relayed audio chunk
   (router hand-over -> on the socket) p50/p99, and time to first audio side by side.

Parts 1 and 2 load the edge over raw websockets rather than the SDK (``voicemesh.realtime``'s
client): a thousand SDK connections would spend this machine's CPU on the client's own event
models, inside the measurement. They send the same events, built by ``voicemesh.realtime``'s
``session_config``, ``append_event`` and ``pcm_chunks``; part 3 uses the client itself.

The parts' modules: ``edge_process`` (the edge in a subprocess, raw sessions), ``edge_streams``
(part 2), ``edge_relay`` (part 3); this one runs part 1 and the whole bench.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from websockets.asyncio.client import ClientConnection

from edge.shared.protocols import CHUNK_MS
from edge.shared.settings import EdgeSettings
from voicemesh.bench.e2e_report import percentile
from voicemesh.bench.edge_process import EdgeProcess, Report, roundtrip
from voicemesh.bench.edge_relay import bench_relay
from voicemesh.bench.edge_streams import bench_streams, held_verdict, silero_alone
from voicemesh.processes import rss_mib
from voicemesh.realtime import session_config


async def bench_idle(settings: EdgeSettings, n: int, report: Report) -> dict[str, float]:
    edge = EdgeProcess(settings)
    try:
        await edge.ready()
        before = rss_mib(edge.proc.pid)
        sockets: list[ClientConnection] = []
        for i in range(0, n, 50):
            sockets += await asyncio.gather(*(edge.open() for _ in range(min(50, n - i))))
            report(f"idle sessions: {len(sockets)}/{n} open")
        await asyncio.sleep(1.0)
        after = rss_mib(edge.proc.pid)
        sample = sockets[:: max(1, n // 20)]
        update = {"type": "session.update", "session": session_config(instructions="still there?")}
        latencies = await asyncio.gather(*(roundtrip(ws, update, "session.updated") for ws in sample))
        await asyncio.gather(*(ws.close() for ws in sockets))
        return {
            "sessions": float(n),
            "rss_before_mb": before,
            "rss_after_mb": after,
            "kb_per_session": (after - before) * 1024 / n,
            "update_p50_ms": percentile(latencies, 50) * 1000,
        }
    finally:
        edge.stop()


async def run_bench(
    settings: EdgeSettings,
    *,
    region_url: str | None,
    n_idle: int,
    n_streams: int,
    seconds: float,
    n_turns: int,
    report: Report,
    out: Callable[[str], None],
    chunk_sizes: tuple[int, ...] = (40, 100),
) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    if n_idle > 0:  # (--idle 0: streams only)
        idle = results["idle"] = await bench_idle(settings, n_idle, report)
        out(
            f"idle sessions: {n_idle} open, RSS {idle['rss_before_mb']:.0f} -> {idle['rss_after_mb']:.0f} "
            f"MB, {idle['kb_per_session']:.0f} KB per session; session.update p50 "
            f"{idle['update_p50_ms']:.1f} ms"
        )
    for chunk_ms in chunk_sizes:
        s = results[f"streams_{chunk_ms}ms"] = await bench_streams(
            settings, n_streams, seconds, report, chunk_ms
        )
        out(
            f"active streams ({chunk_ms} ms appends): {n_streams} used {s['edge_cpu_cores']:.2f} core, "
            f"{s['cpu_ms_per_stream_s']:.2f} ms CPU per stream-second with the backlog -> "
            f"{s['streams_per_core_by_work']:.0f} streams per core ({held_verdict(s, n_streams)}); "
            f"backlog p50 {s['backlog_p50_ms']:.1f} ms p99 {s['backlog_p99_ms']:.1f} ms; VAD "
            f"{s['vad_chunks']:.0f} chunks in {s['vad_calls']:.0f} calls (mean batch {s['mean_batch']:.1f}, "
            f"Silero at {s['vad_rate_hz'] / 1000:g} kHz)"
        )
    if 40 in chunk_sizes:
        # The capacity is what a core serves when it is full: below that, the edge spends the CPU
        # it has to spare on smaller VAD batches and on waking for fewer frames at a time, so a
        # stream costs more, the more so the more idle the core. Overloaded by a third, the VAD
        # runs full batches all the time and the backlog is served after the window.
        over = max(n_streams + 1, n_streams * 4 // 3)
        s = results["streams_40ms_overloaded"] = await bench_streams(settings, over, seconds, report, 40)
        out(
            f"overloaded, {over} streams (40 ms appends): {s['cpu_ms_per_stream_s']:.2f} ms CPU per "
            f"stream-second at full load (mean VAD batch {s['mean_batch']:.1f}) -> "
            f"{s['streams_per_core_by_work']:.0f} streams per core: the edge's capacity"
        )
        with_vad = results["streams_40ms"]
        s = results["streams_40ms_no_vad"] = await bench_streams(
            settings, n_streams, seconds, report, 40, server_vad=False
        )
        batch = max(1, round(with_vad["mean_batch"]))
        model = results["silero_alone"] = await asyncio.to_thread(
            silero_alone, settings.vad_model, batch, runtime=settings.vad_runtime
        )
        total, bare = with_vad["cpu_ms_per_stream_s"], s["cpu_ms_per_stream_s"]
        floor = model["ms_per_stream_s"]
        out(
            f"active streams (40 ms appends, no server VAD): {bare:.2f} ms CPU per "
            f"stream-second ({s['streams_per_core_by_work']:.0f} per core)"
        )
        out(
            f"Silero alone ({settings.vad_runtime}), batch {model['batch']:.0f}: "
            f"{model['us_per_chunk']:.1f} us per {CHUNK_MS} ms "
            f"chunk = {floor:.2f} ms CPU per stream-second"
        )
        out(
            f"40 ms appends, ms CPU per stream-second: {total:.2f} = transport, events and buffer {bare:.2f} "
            f"+ Silero {floor:.2f} + VAD's batching, turn detection and turns {total - bare - floor:.2f}"
        )
    if region_url:
        r = results["relay"] = await bench_relay(settings, region_url, n_turns, report)
        out(
            f"relay: {r['chunks']:.0f} audio chunks, edge time per chunk p50 {r['relay_p50_ms']:.3f} ms "
            f"p99 {r['relay_p99_ms']:.3f} ms; time to first audio p50 direct "
            f"{r['direct_ttfa_p50_ms']:.0f} ms vs through the edge {r['edge_ttfa_p50_ms']:.0f} ms"
        )
    return results
