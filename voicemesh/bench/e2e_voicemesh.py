"""The voicemesh side of ``voicemesh bench e2e``: vLLM, one region and one edge as processes, and
callers that are the stock ``openai`` SDK's Realtime client sending 40 ms appends at real-time pace,
then silence, with the edge's default server VAD."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from websockets.exceptions import ConnectionClosed

from edge.responses.stages import read_stages
from edge.shared.settings import EdgeSettings
from voicemesh.bench.e2e_inputs import SYSTEM_PROMPT, E2eOptions, Utterance, caller_order
from voicemesh.bench.e2e_report import Sample
from voicemesh.bench.edge_process import EdgeProcess, Report
from voicemesh.bench.regions import LocalRegion
from voicemesh.llm_server import VllmServer
from voicemesh.processes import free_port
from voicemesh.profiles import Profile
from voicemesh.realtime import (
    CHUNK_MS,
    META_DEGRADED,
    META_DEGRADED_REASON,
    append_event,
    chunk_bytes,
    session_config,
    tick,
)
from voicemesh.realtime import connect as realtime_connect
from wire.audio import CLIENT_RATE, STT_RATE, float_to_pcm16, resample
from wire.errors import VoicemeshError

TURN_TIMEOUT_S = 120.0


async def _voicemesh_turn(conn: Any, sample: Sample, pcm24: bytes, speech_end_byte: int) -> None:
    """Speak one utterance at real-time pace and keep the microphone open (silence) until the
    response is done and the transcript is in."""
    done = asyncio.Event()
    state: dict[str, Any] = {"first": None, "transcribed": False, "responded": False, "degraded": False}

    async def listen() -> None:
        async for event in conn:
            kind = event.type
            if kind == "response.output_audio.delta" and state["first"] is None:
                state["first"] = time.monotonic()
            elif kind == "response.output_audio_transcript.delta":
                # The edge sends each clause's text just before its audio: the first delta is the
                # first audio chunk's text.
                sample.first_chunk_text = sample.first_chunk_text or event.delta
                sample.reply_text += event.delta
            elif kind == "conversation.item.input_audio_transcription.completed":
                sample.transcript, state["transcribed"] = event.transcript, True
            elif kind == "error":
                sample.error = f"{event.error.code}: {event.error.message}"
                done.set()
            elif kind == "response.done":
                state["responded"] = True
                status = event.response.status or ""
                meta = dict(event.response.metadata or {})
                sample.stages_ms = read_stages(meta)
                if meta.get(META_DEGRADED) == "true":
                    # The edge's own apology (Piper) because the region did not answer in time:
                    # audio, but no answer; it does not count as one.
                    state["degraded"] = True
                    sample.error = f"degraded to the edge's apology ({meta.get(META_DEGRADED_REASON)})"
                elif status != "completed" and not sample.error:
                    sample.error = f"response {status}"
            if state["responded"] and state["transcribed"]:
                done.set()
                return

    step = chunk_bytes(CHUNK_MS)
    silence = append_event(bytes(step))
    listener = asyncio.create_task(listen())
    sent_end = 0.0
    t0 = time.monotonic()
    i = 0
    try:
        async with asyncio.timeout(TURN_TIMEOUT_S):
            while not (done.is_set() or listener.done()):
                chunk = pcm24[i * step : (i + 1) * step]
                await conn.send_raw(append_event(chunk) if chunk else silence)
                if not sent_end and (i + 1) * step >= speech_end_byte:
                    sent_end = time.monotonic()
                i += 1
                await tick(t0, i, CHUNK_MS / 1000)
    except TimeoutError:
        sample.error = sample.error or "no complete answer within the turn timeout"
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listener
    if state["first"] is not None and sent_end and not state["degraded"]:
        sample.ttfa_s = state["first"] - sent_end


async def _voicemesh_caller(
    url: str, key: str, utterances: Sequence[Utterance], options: E2eOptions, callers: int, pass_no: int,
    index: int,
) -> list[Sample]:  # fmt: skip
    samples = []
    async with realtime_connect(url, key, max_retries=0) as conn:
        await conn.session.update(
            session=session_config(instructions=SYSTEM_PROMPT, max_output_tokens=options.max_output_tokens)  # type: ignore[arg-type]
        )
        async for event in conn:
            if event.type == "session.updated":
                break
        for u in caller_order(index, len(utterances)):
            utt = utterances[u]
            sample = Sample("voicemesh", callers, pass_no, index, u, utt.text)
            audio24 = resample(utt.audio16, STT_RATE, CLIENT_RATE)
            end_byte = int(utt.speech_end_s * CLIENT_RATE) * 2
            await _voicemesh_turn(conn, sample, float_to_pcm16(audio24), end_byte)
            samples.append(sample)
    return samples


@dataclass
class VoicemeshStack:
    url: str
    """The edge's ``ws://host:port/v1``."""
    key: str
    llm_url: str
    logs: tuple[Path, ...]
    """The region's and the edge's logs (a failed turn's cause is in them)."""


@contextlib.asynccontextmanager
async def voicemesh_stack(
    options: E2eOptions,
    profile: Profile,
    work: Path,
    report: Report,
    edge_env: Mapping[str, str] | None = None,
) -> AsyncIterator[VoicemeshStack]:
    """vLLM (unless given), one region and one edge (with ``edge_env`` settings), as processes; all
    stopped on the way out."""
    vllm: VllmServer | None = None
    region: LocalRegion | None = None
    edge: EdgeProcess | None = None
    try:
        llm_url = options.llm_url
        if not llm_url:
            vllm = VllmServer(profile.llm, port=free_port(), log_path=work / "vllm.log", report=report)
            llm_url = await vllm.start()
        region = LocalRegion("bench-e2e", llm_url, work)
        report(f"voicemesh: starting a region (log {work / 'bench-e2e.log'})")
        await region.start()
        settings = EdgeSettings(api_keys=("bench-e2e-key",), vad_model=profile.edge.vad_model)
        edge = EdgeProcess(settings, region=f"{region.id}={region.url}", env=edge_env)
        report(f"voicemesh: starting an edge in front of it (log {edge.log})")
        await edge.ready()
        logs = (work / f"{region.id}.log", edge.log)
        yield VoicemeshStack(f"ws://127.0.0.1:{edge.port}/v1", edge.key, llm_url, logs)
    finally:
        if edge is not None:
            edge.stop()
        if region is not None:
            await region.stop()
        if vllm is not None:
            await vllm.stop()


async def voicemesh_pass(
    stack: VoicemeshStack, utterances: Sequence[Utterance], options: E2eOptions, callers: int, pass_no: int
) -> list[Sample]:
    try:
        per_caller = await asyncio.gather(
            *(
                _voicemesh_caller(stack.url, stack.key, utterances, options, callers, pass_no, i)
                for i in range(callers)
            )
        )
    except (openai.OpenAIError, OSError, ConnectionClosed) as exc:
        raise VoicemeshError(
            f"a voicemesh caller lost its session ({exc!r}); see the logs: "
            + ", ".join(str(p) for p in stack.logs)
        ) from exc
    return [s for samples in per_caller for s in samples]
