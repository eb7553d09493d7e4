"""The edge bench's active streams: N sessions stream audio at real time into edge processes; the
edges' CPU per stream-second, the backlog a ``clear`` shows after the window, and Silero timed alone
at the batch the edge ran (the floor under VAD's share)."""

from __future__ import annotations

import asyncio
import contextlib
import time

import numpy as np
from websockets.asyncio.client import ClientConnection

from edge.audio.decimate import HISTORY, decimate
from edge.audio.silero import load_silero
from edge.audio.vad import CONTEXT
from edge.shared.protocols import CHUNK, CHUNK_MS
from edge.shared.settings import EdgeSettings
from voicemesh.bench.e2e_report import percentile
from voicemesh.bench.edge_process import EdgeProcess, Report, roundtrip
from voicemesh.processes import cpu_seconds
from voicemesh.realtime import append_event, pcm_chunks, session_config, tick
from voicemesh.speech import espeak
from wire.audio import CLIENT_RATE, float_to_pcm16


def speech_loop(seconds: float) -> np.ndarray:
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
    chunks = [append_event(c) for c in pcm_chunks(float_to_pcm16(speech_loop(seconds + 2)), chunk_ms)[:-1]]
    for edge in edges:
        await edge.ready()
    groups = [[await edge.open() for _ in range(n)] for edge in edges]
    config = session_config(create_response=False)
    if not server_vad:
        config["audio"]["input"]["turn_detection"] = None
    no_reply = {"type": "session.update", "session": config}
    sockets = [ws for group in groups for ws in group]
    await asyncio.gather(*(roundtrip(ws, no_reply, "session.updated") for ws in sockets))
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
        *(asyncio.gather(*(roundtrip(ws, clear, "input_audio_buffer.cleared") for ws in g)) for g in groups)
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
            "backlog_p50_ms": percentile(list(backlog), 50) * 1000,
            "backlog_p99_ms": percentile(list(backlog), 99) * 1000,
            "vad_calls": float(calls),
            "vad_chunks": float(chunks_run),
            "mean_batch": chunks_run / calls if calls else 0.0,
            "vad_rate_hz": float(vad1["rate"]),
        })  # fmt: skip
    return results


HELD_MS = 500.0
"""A backlog under this after the window (the ``clear`` sent then answered within it): the edge kept
up with its streams in real time."""


def held_verdict(s: dict[str, float], n: int) -> str:
    if s["backlog_p50_ms"] < HELD_MS:
        return f"it kept up in real time: one core holds {n} streams"
    return "it fell behind: more than one core's work"


def silero_alone(
    model_path: str, batch: int, calls: int = 200, *, runtime: str = "openvino"
) -> dict[str, float]:
    """CPU time of the edge's Silero call alone, at ``batch`` chunks a call, on chunks of the
    streams' own speech: the floor under VAD's share (one thread, as the edge runs it)."""
    model = load_silero(model_path, runtime)
    speech = speech_loop(batch * CHUNK / CLIENT_RATE + 1)
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
