"""The voicemesh side of ``voicemesh bench e2e``: vLLM, one region and one edge as processes, and
callers that are the stock ``openai`` SDK's Realtime client sending 40 ms appends at real-time pace
(``e2e_caller.Speaker``: the sentence, silence, maybe a backchannel), with the pass's
``turn_detection`` type."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from websockets.exceptions import ConnectionClosed

from edge.responses.stages import read_stages
from edge.shared.settings import EdgeSettings
from voicemesh.bench.e2e_caller import Speaker, TurnLog
from voicemesh.bench.e2e_inputs import PAD_S, SYSTEM_PROMPT, E2eOptions, Utterance, caller_order
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


async def _voicemesh_turn(conn: Any, sample: Sample, speaker: Speaker) -> None:
    """Speak one turn at real-time pace (``Speaker``: the sentence, silence, maybe a backchannel)
    and keep the microphone open until the turn settles and the sentence's transcript is in."""
    log = speaker.log
    started: dict[str, float] = {}
    """Speech item id -> when the edge said its speech started (turn clock)."""
    carried: list[str] = []
    """Items whose speech started in the turn before and stopped in this one, after its sentence
    began: a turn left open there (``semantic_vad`` waiting for more after unclear words) that this
    sentence went on."""
    heard: dict[str, str] = {}

    def sentence_items() -> list[str]:
        b = log.backchannel_s
        return carried + [i for i, at in started.items() if b is None or at < b]

    async def listen() -> None:
        async for event in conn:
            kind = event.type
            if kind == "response.output_audio.delta":
                log.audio(event.response_id, len(base64.b64decode(event.delta)) / (CLIENT_RATE * 2))
            elif kind == "response.output_audio_transcript.delta":
                # The edge sends each clause's text just before its audio: the first delta is the
                # first audio chunk's text.
                sample.first_chunk_text = sample.first_chunk_text or event.delta
                sample.reply_text += event.delta
            elif kind == "input_audio_buffer.speech_started":
                started[event.item_id] = log.now()
            elif kind == "input_audio_buffer.speech_stopped":
                if event.item_id not in started and log.now() > PAD_S:
                    carried.append(event.item_id)
            elif kind == "conversation.item.input_audio_transcription.completed":
                heard[event.item_id] = event.transcript
            elif kind == "response.created":
                log.response(started=True)
            elif kind == "error":
                sample.error = f"{event.error.code}: {event.error.message}"
                return
            elif kind == "response.done":
                status = event.response.status or ""
                meta = dict(event.response.metadata or {})
                sample.stages_ms = sample.stages_ms or read_stages(meta)
                if status == "cancelled":
                    log.stop()
                else:
                    log.response(started=False)
                if meta.get(META_DEGRADED) == "true":
                    # The edge's own apology (Piper) because the region did not answer in time:
                    # audio, but no answer; it does not count as one.
                    sample.error = f"degraded to the edge's apology ({meta.get(META_DEGRADED_REASON)})"
                elif status not in ("completed", "cancelled") and not sample.error:
                    sample.error = f"response {status}"

    def over() -> bool:
        # (a speech item the edge never transcribes, e.g. too short to commit, is waited for a while only)
        transcribed = all(i in heard for i in sentence_items()) or log.now() - log.last_activity_s > 4
        return speaker.settled() and transcribed

    listener = asyncio.create_task(listen())
    i = 0
    try:
        async with asyncio.timeout(TURN_TIMEOUT_S):
            while not (over() or listener.done()):
                await conn.send_raw(append_event(speaker.next()))
                i += 1
                await tick(log.t0, i, CHUNK_MS / 1000)
    except TimeoutError:
        sample.error = sample.error or "no complete answer within the turn timeout"
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listener
    sample.transcript = " ".join(heard[i] for i in sentence_items() if i in heard).strip()
    log.into(sample)
    if sample.error.startswith("degraded"):
        sample.ttfa_s = None


async def _voicemesh_caller(
    url: str, key: str, utterances: Sequence[Utterance], options: E2eOptions, mode: str, callers: int,
    pass_no: int, index: int,
) -> list[Sample]:  # fmt: skip
    samples = []
    async with realtime_connect(url, key, max_retries=0) as conn:
        session = session_config(instructions=SYSTEM_PROMPT, max_output_tokens=options.max_output_tokens)
        # Input transcription on: a sentence part whose response was cancelled (a pause taken for the
        # end) is transcribed too, as Pipecat's STT transcribes everything it hears (the WER compares).
        turn_input = {"turn_detection": {"type": mode}, "transcription": {"model": "whisper-1"}}
        session["audio"] = {"input": turn_input}
        await conn.session.update(session=session)  # type: ignore[arg-type]
        async for event in conn:
            if event.type == "session.updated":
                break
        step = chunk_bytes(CHUNK_MS)
        for u in caller_order(index, len(utterances)):
            utt = utterances[u]
            sample = Sample(
                "voicemesh", mode, callers, pass_no, index, u, utt.text, utt.paused, utt.backchannel
            )
            bc = b""
            if utt.backchannel16 is not None:
                bc = float_to_pcm16(resample(utt.backchannel16, STT_RATE, CLIENT_RATE))
            pcm = float_to_pcm16(resample(utt.audio16, STT_RATE, CLIENT_RATE))
            speaker = Speaker(TurnLog(), pcm, int(utt.speech_end_s * CLIENT_RATE) * 2, bc, step)
            await _voicemesh_turn(conn, sample, speaker)
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
    stack: VoicemeshStack, utterances: Sequence[Utterance], options: E2eOptions, mode: str, callers: int,
    pass_no: int,
) -> list[Sample]:  # fmt: skip
    """Every caller's turns with ``turn_detection`` of type ``mode`` (``server_vad``, ``semantic_vad``)."""
    try:
        per_caller = await asyncio.gather(
            *(
                _voicemesh_caller(stack.url, stack.key, utterances, options, mode, callers, pass_no, i)
                for i in range(callers)
            )
        )
    except (openai.OpenAIError, OSError, ConnectionClosed) as exc:
        raise VoicemeshError(
            f"a voicemesh caller lost its session ({exc!r}); see the logs: "
            + ", ".join(str(p) for p in stack.logs)
        ) from exc
    return [s for samples in per_caller for s in samples]
