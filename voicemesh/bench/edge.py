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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from websockets.asyncio.client import ClientConnection, connect

from edge.audio.decimate import HISTORY, decimate
from edge.audio.silero import load_silero
from edge.audio.vad import CONTEXT
from edge.shared.protocols import CHUNK, CHUNK_MS
from edge.shared.settings import EdgeSettings
from voicemesh.processes import cpu_seconds, free_port, rss_mib, spawn, wait_healthy
from voicemesh.processes import stop as stop_process
from voicemesh.realtime import (
    Reply,
    append_event,
    collect_reply,
    pcm_chunks,
    session_config,
    tick,
)
from voicemesh.realtime import connect as realtime_connect
from voicemesh.speech import espeak
from wire.audio import CLIENT_RATE, float_to_pcm16

Report = Callable[[str], None]


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


class EdgeProcess:
    """``voicemesh edge serve`` in a subprocess (optionally pinned to one core); by default in front
    of no reachable region, or of ``region`` (``ID=URL``, as ``--region`` takes it)."""

    def __init__(
        self, settings: EdgeSettings, *, core: int | None = None, region: str = "nowhere=http://127.0.0.1:9",
        checkout: Path | None = None,
    ) -> None:  # fmt: skip
        """``checkout``: run that source tree's edge (a comparison), with this environment's packages."""
        self.port = free_port()
        self.key = settings.api_keys[0]
        cmd = [
            sys.executable, "-m", "voicemesh.cli.main", "edge", "serve", "--region", region,
            "--port", str(self.port), "--vad-model", settings.vad_model,
            "--vad-runtime", settings.vad_runtime,
            "--max-sessions-per-key", "100000", "--connect-burst", "100000",
        ]  # fmt: skip
        if core is not None and shutil.which("taskset"):
            cmd = ["taskset", "-c", str(core), *cmd]
        # The bench reads /status: its one key is the edge's admin key too.
        env = {**os.environ, "VOICEMESH_API_KEY": self.key, "VOICEMESH_ADMIN_KEY": self.key}
        if checkout is not None:
            # ``python -m`` puts its working directory first on ``sys.path``, ahead of PYTHONPATH:
            # started from inside another checkout it would run that one's code.
            env["PYTHONPATH"] = str(checkout)
        self.log = Path(tempfile.gettempdir()) / f"voicemesh-bench-edge-{self.port}.log"
        self.proc = spawn(cmd, log_path=self.log, env=env, cwd=checkout)
        self.url = f"ws://127.0.0.1:{self.port}/v1/realtime?model=bench"

    async def ready(self) -> None:
        await wait_healthy(
            f"http://127.0.0.1:{self.port}/health", timeout_s=30, process=self.proc, log_path=self.log,
            what="the benchmarked edge",
        )  # fmt: skip
        await asyncio.sleep(2.5)  # let Piper finish loading before measuring memory

    async def vad_stats(self) -> dict[str, Any]:
        async with httpx.AsyncClient() as http:
            r = await http.get(
                f"http://127.0.0.1:{self.port}/status", headers={"Authorization": f"Bearer {self.key}"}
            )
            stats: dict[str, Any] = r.json()["edge"]["vad"]
            return stats

    async def open(self) -> ClientConnection:
        # No keepalive pings: a saturated edge answers them late, and the bench would drop the
        # very sessions whose backlog it is measuring.
        ws = await connect(
            self.url, additional_headers={"Authorization": f"Bearer {self.key}"}, max_size=None,
            ping_interval=None,
        )  # fmt: skip
        await ws.recv()  # session.created
        return ws

    def stop(self) -> None:
        stop_process(self.proc)


async def _roundtrip(ws: ClientConnection, event: dict[str, Any], until: str) -> float:
    t0 = time.perf_counter()
    await ws.send(json.dumps(event))
    while json.loads(await ws.recv())["type"] != until:
        pass
    return time.perf_counter() - t0


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
        latencies = await asyncio.gather(*(_roundtrip(ws, update, "session.updated") for ws in sample))
        await asyncio.gather(*(ws.close() for ws in sockets))
        return {
            "sessions": float(n),
            "rss_before_mb": before,
            "rss_after_mb": after,
            "kb_per_session": (after - before) * 1024 / n,
            "update_p50_ms": _pct(latencies, 50) * 1000,
        }
    finally:
        edge.stop()


def _speech_loop(seconds: float) -> np.ndarray:
    """espeak-ng speech with pauses, looped to ``seconds`` at 24 kHz (so VAD sees both)."""
    speech = espeak("Turn on the lights in the kitchen please.", CLIENT_RATE)
    one = np.concatenate([speech, np.zeros(CLIENT_RATE, dtype=np.float32)])
    return np.tile(one, int(seconds * CLIENT_RATE / len(one)) + 2)


async def bench_streams(
    settings: EdgeSettings, n: int, seconds: float, report: Report, chunk_ms: int = 40, *, core: int = 0,
    server_vad: bool = True,
) -> dict[str, float]:  # fmt: skip
    """``server_vad=False``: the same streams with turn detection off, so no VAD runs: what the
    transport, the event parsing and the buffer cost alone (the rest is VAD's share)."""
    edge = EdgeProcess(settings, core=core)  # (another core where something else is pinned to 0)
    try:
        (result,) = await stream_into([edge], n, seconds, report, chunk_ms, server_vad=server_vad)
        return result
    finally:
        edge.stop()


async def stream_into(
    edges: list[EdgeProcess], n: int, seconds: float, report: Report, chunk_ms: int = 40, *,
    server_vad: bool = True,
) -> list[dict[str, float]]:  # fmt: skip
    """``n`` streams into each of ``edges`` (started, not ready yet) at once, for ``seconds`` of audio
    at real time; each edge's CPU until its backlog was served, per stream-second of audio."""
    # Whole chunks only, serialised once: the generator's own cost stays out of the measurement.
    chunks = [append_event(c) for c in pcm_chunks(float_to_pcm16(_speech_loop(seconds + 2)), chunk_ms)[:-1]]
    for edge in edges:
        await edge.ready()
    groups = [[await edge.open() for _ in range(n)] for edge in edges]
    config = session_config(create_response=False)
    if not server_vad:
        config["audio"]["input"]["turn_detection"] = None
    no_reply = {"type": "session.update", "session": config}
    sockets = [ws for group in groups for ws in group]
    await asyncio.gather(*(_roundtrip(ws, no_reply, "session.updated") for ws in sockets))
    report(
        f"active streams: {n} sessions{' each' if len(edges) > 1 else ''}, {chunk_ms} ms appends"
        f"{'' if server_vad else ', no server VAD'} for {seconds:.0f} s"
    )
    vad0 = [await edge.vad_stats() for edge in edges]
    cpu0, t0 = [cpu_seconds(edge.proc.pid) for edge in edges], time.monotonic()
    n_chunks = int(seconds * 1000 / chunk_ms)

    async def stream(ws: ClientConnection, offset: int) -> None:
        start = time.monotonic()
        for k in range(n_chunks):
            await ws.send(chunks[(offset + k) % len(chunks)])
            await tick(start, k + 1, chunk_ms / 1000)

    async def drain(ws: ClientConnection) -> None:
        # Read until cancelled: a client that stops reading stops answering the edge's pings
        # too, and a busy edge then closes it (1011) mid-measurement.
        with contextlib.suppress(Exception):
            while True:
                await ws.recv()

    drains = [asyncio.create_task(drain(ws)) for ws in sockets]
    await asyncio.gather(*(stream(ws, i * 7) for i, ws in enumerate(sockets)))
    wall = time.monotonic() - t0
    cpu = [cpu_seconds(edge.proc.pid) - c for edge, c in zip(edges, cpu0, strict=True)]
    for d in drains:
        d.cancel()
    await asyncio.gather(*drains, return_exceptions=True)  # (one reader per socket at a time)
    clear = {"type": "input_audio_buffer.clear"}
    backlogs = await asyncio.gather(
        *(asyncio.gather(*(_roundtrip(ws, clear, "input_audio_buffer.cleared") for ws in g)) for g in groups)
    )
    results = []
    for edge, group, backlog, c0, window_cpu, v0 in zip(
        edges, groups, backlogs, cpu0, cpu, vad0, strict=True
    ):
        # All the work of the window is done once every backlog came back: CPU seconds per second
        # of audio streamed, whether or not the edge had its core to itself (a shared machine).
        cpu_all = cpu_seconds(edge.proc.pid) - c0
        vad1 = await edge.vad_stats()
        await asyncio.gather(*(ws.close() for ws in group))
        calls, chunks_run = vad1["calls"] - v0["calls"], vad1["chunks"] - v0["chunks"]
        used, audio_s = window_cpu / wall, n_chunks * chunk_ms / 1000
        results.append({
            "streams": float(n),
            "wall_s": wall,
            "edge_cpu_cores": used,
            "streams_per_core": n / used if used else 0.0,
            "cpu_ms_per_stream_s": cpu_all * 1000 / (n * audio_s),
            "streams_per_core_by_work": n * audio_s / cpu_all if cpu_all else 0.0,
            "backlog_p50_ms": _pct(list(backlog), 50) * 1000,
            "backlog_p99_ms": _pct(list(backlog), 99) * 1000,
            "vad_calls": float(calls),
            "vad_chunks": float(chunks_run),
            "mean_batch": chunks_run / calls if calls else 0.0,
            "vad_rate_hz": float(vad1["rate"]),
        })  # fmt: skip
    return results


HELD_MS = 500.0
"""A backlog under this after the window (the ``clear`` sent then answered within it): the edge kept
up with its streams in real time."""


def _held(s: dict[str, float], n: int) -> str:
    if s["backlog_p50_ms"] < HELD_MS:
        return f"it kept up in real time: one core holds {n} streams"
    return "it fell behind: more than one core's work"


def silero_alone(
    model_path: str, batch: int, calls: int = 200, *, runtime: str = "openvino"
) -> dict[str, float]:
    """CPU time of the edge's Silero call alone, at ``batch`` chunks a call, on chunks of the
    streams' own speech: the floor under VAD's share (one thread, as the edge runs it)."""
    model = load_silero(model_path, runtime)
    speech = _speech_loop(batch * CHUNK / CLIENT_RATE + 1)
    rows = np.zeros((batch, HISTORY + CHUNK), dtype=np.float32)
    rows[:, HISTORY:] = speech[: batch * CHUNK].reshape(batch, CHUNK)
    frames = np.concatenate([np.zeros((batch, CONTEXT), np.float32), decimate(rows)], axis=1)
    states = np.zeros((batch, 2, 128), dtype=np.float32)
    for _ in range(10):
        model.run(frames, states)
    t0 = time.thread_time()
    for _ in range(calls):
        model.run(frames, states)
    per_chunk = (time.thread_time() - t0) / (calls * batch)
    return {
        "batch": float(batch),
        "us_per_chunk": per_chunk * 1e6,
        "ms_per_stream_s": per_chunk * 1e6 / CHUNK_MS,
    }


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
        "relay_p50_ms": _pct(relay, 50) * 1000,
        "relay_p99_ms": _pct(relay, 99) * 1000,
        "direct_ttfa_p50_ms": _pct(direct_ttfa, 50) * 1000,
        "edge_ttfa_p50_ms": _pct(edge_ttfa, 50) * 1000,
    }


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
            f"{s['streams_per_core_by_work']:.0f} streams per core ({_held(s, n_streams)}); "
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
