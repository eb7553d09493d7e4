"""``voicemesh bench transports``: end of speech to first audio heard, through each way a voice reaches
the edge, side by side in one run on one stack (vLLM, one region, one edge): the Realtime WebSocket
(the stock openai SDK), WebRTC (an aiortc peer, Opus both ways: ``voicemesh/webrtc_client.py``) and
a Twilio Media Stream (mu-law at 8 kHz: ``voicemesh/twilio_client.py``).

Each transport holds one session for the run and speaks the same utterances in the same order, in
real time; the order of the transports turns with each utterance so none always goes first. "First
audio heard" is the same for all three (``heard_onset``): the answer's chunks played as a client
plays them (each when it arrives or when the previous one ends, whichever is later), and the time
its first sample above the speech floor plays, less the time the last speech sample was sent.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicemesh.bench.e2e_inputs import SPEECH_FLOOR, SYSTEM_PROMPT, E2eOptions, Utterance, make_utterances
from voicemesh.bench.e2e_report import percentile
from voicemesh.bench.e2e_voicemesh import voicemesh_stack
from voicemesh.bench.edge_process import Report
from voicemesh.profiles import Profile
from voicemesh.realtime import CHUNK_MS, append_event, chunk_bytes, session_config, tick
from voicemesh.realtime import connect as realtime_connect
from voicemesh.twilio_client import place_call, to_mulaw
from voicemesh.webrtc_client import WebRtcCaller
from wire.audio import CLIENT_RATE, G711_RATE, STT_RATE, float_to_pcm16, g711_to_float, resample

TRANSPORTS = ("websocket", "webrtc", "twilio")
TURN_TIMEOUT_S = 120.0
Chunk = tuple[float, np.ndarray[Any, np.dtype[np.float32]]]
"""(arrival time, float samples) of one piece of the answer."""


@dataclass
class TransportSample:
    transport: str
    utterance: int
    ttfa_s: float | None = None
    error: str = ""


@dataclass
class TransportOptions:
    llm_url: str | None = None
    passes: int = 2
    utterances: int = 4
    max_output_tokens: int = 60


def heard_onset(
    chunks: Sequence[Chunk], rate: int, since: float, floor: float = SPEECH_FLOOR
) -> float | None:
    """When the first sample above ``floor`` plays, the chunks (arriving after ``since``) played back
    to back as they come; ``None`` if none is loud."""
    clock = since
    for arrived, samples in chunks:
        if arrived < since:
            continue
        start = max(arrived, clock)
        loud = np.flatnonzero(np.abs(samples) > floor)
        if len(loud):
            return start + float(loud[0]) / rate
        clock = start + len(samples) / rate
    return None


async def _websocket_turn(conn: Any, utt: Utterance, options: TransportOptions) -> float | None:
    chunks: list[Chunk] = []
    done = asyncio.Event()

    async def listen() -> None:
        async for event in conn:
            if event.type == "response.output_audio.delta":
                pcm = np.frombuffer(base64.b64decode(event.delta), dtype=np.int16)
                chunks.append((time.monotonic(), pcm.astype(np.float32) / 32768.0))
            elif event.type in ("response.done", "error"):
                done.set()
                return

    pcm24 = float_to_pcm16(resample(utt.audio16, STT_RATE, CLIENT_RATE))
    end_byte, step = int(utt.speech_end_s * CLIENT_RATE) * 2, chunk_bytes(CHUNK_MS)
    listener = asyncio.create_task(listen())
    sent_end, t0, i = 0.0, time.monotonic(), 0
    try:
        async with asyncio.timeout(TURN_TIMEOUT_S):
            while not (done.is_set() or listener.done()):
                chunk = pcm24[i * step : (i + 1) * step]
                await conn.send_raw(append_event(chunk or bytes(step)))
                i += 1
                if not sent_end and i * step >= end_byte:
                    sent_end = time.monotonic()
                await tick(t0, i, CHUNK_MS / 1000)
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listener
    onset = heard_onset(chunks, CLIENT_RATE, sent_end)
    return None if onset is None else onset - sent_end


async def _webrtc_turn(caller: WebRtcCaller, utt: Utterance) -> float | None:
    answered = len(caller.of_type("response.done"))
    first_chunk = len(caller.arrivals)
    pcm24 = float_to_pcm16(resample(utt.audio16, STT_RATE, CLIENT_RATE))
    caller.speak(pcm24)  # played from the next 20 ms frame, in real time
    sent_end = time.monotonic() + utt.speech_end_s
    await caller.wait_for("response.done", answered + 1, within_s=TURN_TIMEOUT_S)
    await asyncio.sleep(0.5)  # the answer's last frames are still playing on the track
    chunks = [
        (t, np.frombuffer(bytes(caller.heard[a:b]), dtype=np.int16).astype(np.float32) / 32768.0)
        for t, a, b in caller.arrivals[first_chunk:]
    ]
    onset = heard_onset(chunks, CLIENT_RATE, sent_end)
    return None if onset is None else onset - sent_end


async def _twilio_turn(call: Any, utt: Utterance) -> float | None:
    def answers() -> int:
        return sum(1 for _, name in call.received.marks if name.startswith("done:"))

    before, first_media = answers(), len(call.received.media)
    t0 = time.monotonic()
    await call.send_mulaw(to_mulaw(utt.audio16, STT_RATE))
    sent_end = t0 + utt.speech_end_s
    await call.send_silence_until(lambda: answers() > before, timeout_s=TURN_TIMEOUT_S)
    chunks = [(t, g711_to_float(m, "ulaw")) for t, m in call.received.media[first_media:]]
    onset = heard_onset(chunks, G711_RATE, sent_end)
    return None if onset is None else onset - sent_end


async def _measure(kind: str, turn: Any, index: int, samples: list[TransportSample], report: Report) -> None:
    sample = TransportSample(kind, index)
    try:
        sample.ttfa_s = await turn
        if sample.ttfa_s is None:
            sample.error = "no audio above the speech floor"
    except (TimeoutError, OSError) as exc:
        sample.error = f"{type(exc).__name__}: {exc}"
    samples.append(sample)
    shown = f"{sample.ttfa_s:.3f} s" if sample.ttfa_s is not None else sample.error
    report(f"  {kind:<9} utterance {index}: {shown}")


async def run_transports(options: TransportOptions, profile: Profile, report: Report) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="voicemesh-bench-transports-"))
    utterances = make_utterances(options.utterances, work)
    token = secrets.token_hex(16)
    samples: list[TransportSample] = []
    e2e = E2eOptions(llm_url=options.llm_url, work_dir=str(work))
    config = session_config(instructions=SYSTEM_PROMPT, max_output_tokens=options.max_output_tokens)
    async with voicemesh_stack(e2e, profile, work, report, edge_env={
        "VOICEMESH_TWILIO_AUTH_TOKEN": token,
        "VOICEMESH_TWILIO_API_KEY": "bench-e2e-key",
    }) as stack:  # fmt: skip
        base = stack.url.replace("ws://", "http://").removesuffix("/v1")
        async with (
            realtime_connect(stack.url, stack.key, max_retries=0) as ws,
            WebRtcCaller.connect(base, stack.key, session=config) as rtc,
            place_call(
                base.replace("http://", "ws://"), token, parameters={"instructions": SYSTEM_PROMPT}
            ) as tw,
        ):
            await ws.session.update(session=config)  # type: ignore[arg-type]
            turns = {
                "websocket": lambda u: _websocket_turn(ws, u, options),
                "webrtc": lambda u: _webrtc_turn(rtc, u),
                "twilio": lambda u: _twilio_turn(tw, u),
            }
            report("voicemesh: a warm-up turn on each transport (not counted)")
            for kind in TRANSPORTS:
                await _measure(kind, turns[kind](utterances[0]), -1, [], report)
            for pass_no in range(options.passes):
                report(f"voicemesh: pass {pass_no + 1} of {options.passes}")
                for i, utt in enumerate(utterances):
                    order = TRANSPORTS[i % 3 :] + TRANSPORTS[: i % 3]
                    for kind in order:
                        await _measure(kind, turns[kind](utt), i, samples, report)
    return {"table": format_transports(samples), "samples": [vars(s) for s in samples]}


def format_transports(samples: Sequence[TransportSample]) -> str:
    """Per transport: turns answered, median and p95 time to first audio, and each as a ratio of the
    WebSocket's."""
    figures: dict[str, tuple[int, int, float, float]] = {}
    for kind in TRANSPORTS:
        mine = [s for s in samples if s.transport == kind]
        values = [s.ttfa_s for s in mine if s.ttfa_s is not None]
        figures[kind] = (len(mine), len(values), percentile(values, 50), percentile(values, 95))
    ws = figures["websocket"]
    lines = [
        "| transport | turns | answered | first audio p50 (s) | p95 | p50 / WebSocket | p95 / WebSocket |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, (turns, answered, p50, p95) in figures.items():
        r50 = p50 / ws[2] if ws[2] > 0 else float("nan")
        r95 = p95 / ws[3] if ws[3] > 0 else float("nan")
        lines.append(f"| {kind} | {turns} | {answered} | {p50:.3f} | {p95:.3f} | {r50:.2f} | {r95:.2f} |")
    return "\n".join(lines)


__all__ = [
    "TRANSPORTS",
    "TransportOptions",
    "TransportSample",
    "format_transports",
    "heard_onset",
    "run_transports",
]
