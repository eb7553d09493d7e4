"""``voicemesh bench e2e``: end of the caller's speech to the first audio back, voicemesh next to a
stock Pipecat pipeline on the same models, the same prompt and the same utterances.

voicemesh: vLLM (started here, or ``--llm-url``), one ``voicemesh region serve`` and one
``voicemesh edge serve`` as processes (``LocalRegion``, ``EdgeProcess``); each caller is the stock
``openai`` SDK's Realtime client (``voicemesh.realtime``) sending 40 ms appends at real-time pace,
then silence, with the edge's default server VAD. Pipecat: ``voicemesh.bench.e2e_pipecat``, one
stock pipeline per caller in a process of its own, on the same vLLM, Whisper directory, Kokoro
model, voice file and voice. Passes alternate (voicemesh, pipecat, voicemesh, ...) at each
concurrency, so load from anything else on the machine hits both alike.

Each turn is timed from the moment the audio frame holding the last speech sample was sent to the
first audio delta (voicemesh) or ``TTSAudioRawFrame`` (Pipecat). Utterances are espeak-ng speech
in several voices and lengths, made at run time; each side's transcript is scored against the text.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import openai
from websockets.exceptions import ConnectionClosed

from edge.responses.stages import read_stages
from edge.shared.settings import EdgeSettings
from region.settings import RegionSettings
from voicemesh.bench.e2e_report import Sample, as_json, summarize, table
from voicemesh.bench.edge import EdgeProcess
from voicemesh.bench.regions import LocalRegion
from voicemesh.llm_server import VllmServer
from voicemesh.processes import free_port, log_tail, spawn, stop_async
from voicemesh.profiles import Profile, cpu_profile
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
from voicemesh.speech import espeak
from wire.audio import CLIENT_RATE, STT_RATE, FloatAudio, float_to_pcm16, resample, write_wav
from wire.errors import VoicemeshError

Report = Callable[[str], None]

SYSTEM_PROMPT = str(next(f.default for f in dataclasses.fields(RegionSettings) if f.name == "system_prompt"))
"""The region's own default system prompt; both sides get it."""

UTTERANCES: tuple[tuple[str, str, int], ...] = (
    # (text, espeak-ng voice, words per minute): several voices and lengths, about 1.5 to 5 s.
    ("What is the capital of France?", "en-us", 165),
    ("Tell me a fun fact about the moon.", "en-gb", 150),
    ("How do I boil an egg?", "en-us+f3", 160),
    ("Can you recommend a good book to read on a rainy weekend at home?", "en-gb-x-rp", 145),
    ("Why is the sky blue during the day but red at sunset?", "en-us+m3", 140),
    ("What should I pack for a short trip to the mountains?", "en-029", 150),
    ("How long does it take to walk five kilometres?", "en-gb-scotland", 155),
    ("What is a healthy breakfast I can make in ten minutes?", "en-us+f2", 150),
    ("Who painted the Mona Lisa?", "en-gb-x-gbclan", 160),
    ("How can I get better sleep when I work late shifts?", "en-us-nyc", 145),
    ("What does a bee do in winter?", "en-gb-x-gbcwmd", 155),
    ("Give me three ideas for a birthday present for my sister.", "en-us+m7", 150),
)
SPEECH_FLOOR = 0.02
"""Amplitude above which a sample counts as speech (espeak-ng's silence is exactly zero)."""
TURN_TIMEOUT_S = 120.0
PAD_S = 0.3


@dataclass(frozen=True)
class E2eOptions:
    llm_url: str | None = None
    callers: tuple[int, ...] = (1, 2, 4)
    passes: int = 3
    utterances: int = 4
    max_output_tokens: int = 60
    warm_up: bool = True
    """One turn per side first, not counted (loads caches and lazy paths on both)."""
    json_out: str | None = None
    work_dir: str | None = None
    """Logs and utterance WAVs (default: a new temporary directory)."""


@dataclass(frozen=True)
class Utterance:
    text: str
    wav16: Path
    audio16: FloatAudio
    speech_end_s: float
    """From the start of the audio to the end of its last speech sample."""

    @property
    def seconds(self) -> float:
        return len(self.audio16) / STT_RATE


def make_utterances(n: int, work: Path) -> list[Utterance]:
    """The first ``n`` of ``UTTERANCES`` spoken by espeak-ng, 16 kHz, 0.3 s of silence either side."""
    if not 1 <= n <= len(UTTERANCES):
        raise VoicemeshError(f"--utterances must be 1 to {len(UTTERANCES)}, not {n}")
    out = []
    pad = np.zeros(int(PAD_S * STT_RATE), dtype=np.float32)
    for i, (text, voice, speed) in enumerate(UTTERANCES[:n]):
        audio = np.concatenate([pad, espeak(text, STT_RATE, voice=voice, speed=speed) * 0.8, pad])
        loud = np.flatnonzero(np.abs(audio) > SPEECH_FLOOR)
        wav = work / f"utterance-{i}.wav"
        write_wav(wav, audio, STT_RATE)
        out.append(Utterance(text, wav, audio, float(loud[-1] + 1) / STT_RATE))
    return out


def caller_order(caller: int, n: int) -> list[int]:
    """Caller ``caller`` speaks every utterance, starting at a different one than its neighbours."""
    return [(caller + k) % n for k in range(n)]


# --- voicemesh: the stock openai SDK against the edge ---------------------------------------------


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
    options: E2eOptions, profile: Profile, work: Path, report: Report
) -> AsyncIterator[VoicemeshStack]:
    """vLLM (unless given), one region and one edge, as processes; all stopped on the way out."""
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
        edge = EdgeProcess(settings, region=f"{region.id}={region.url}")
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


# --- Pipecat: stock pipelines in a process of their own --------------------------------------------


def pipecat_available() -> bool:
    return importlib.util.find_spec("pipecat") is not None


async def pipecat_pass(
    llm_url: str, profile: Profile, utterances: Sequence[Utterance], options: E2eOptions, callers: int,
    pass_no: int, work: Path,
) -> list[Sample]:  # fmt: skip
    job = {
        "llm_url": llm_url,
        "llm_model": profile.llm.served_name,
        "whisper_dir": profile.stt.model,
        "kokoro_model": profile.tts.model,
        "kokoro_voices": profile.tts.voices,
        "voice": profile.tts.default_voice,
        "system_prompt": SYSTEM_PROMPT,
        "max_tokens": options.max_output_tokens,
        "temperature": 0.7,  # the edge's default for a session that sets none (edge/shared/state.py)
        "callers": callers,
        "pass_no": pass_no,
        "utterances": [(u.text, str(u.wav16), u.speech_end_s) for u in utterances],
        "orders": [caller_order(i, len(utterances)) for i in range(callers)],
    }
    name = f"pipecat-{callers}-{pass_no}"
    job_path, out_path, log = work / f"{name}.job.json", work / f"{name}.out.json", work / f"{name}.log"
    job_path.write_text(json.dumps(job))
    out_path.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "voicemesh.bench.e2e_pipecat", str(job_path), str(out_path)]
    proc = spawn(cmd, log_path=log, die_with_parent=True)  # a SIGKILLed bench takes it along
    try:
        code = await asyncio.to_thread(proc.wait)
    finally:
        await stop_async(proc)
    if code != 0 or not out_path.exists():
        raise VoicemeshError(
            f"the Pipecat pass exited with code {code}; its log ({log}) ends:\n{log_tail(log)}\n"
            "check that the bench extra is installed (pip install -e '.[bench]') and the models "
            "are fetched (voicemesh models fetch)"
        )
    return [Sample.from_dict(d) for d in json.loads(out_path.read_text())]


# --- the run ----------------------------------------------------------------------------------------


def _line(samples: Sequence[Sample]) -> str:
    times = [s.ttfa_s for s in samples if s.ttfa_s is not None]
    errors = [s.error for s in samples if s.error]
    got = f"first audio {min(times):.2f}-{max(times):.2f} s" if times else "no audio"
    return f"{got} over {len(samples)} turns" + (f"; {len(errors)} error(s): {errors[0]}" if errors else "")


async def run_e2e(options: E2eOptions, report: Report, profile: Profile | None = None) -> dict[str, Any]:
    """Run every pass; returns the JSON result (``levels`` with figures and ratios, ``samples``,
    ``table`` as printed)."""
    if not pipecat_available():
        raise VoicemeshError("Pipecat is not installed: pip install -e '.[bench]' (or `make bench-setup`)")
    profile = profile or cpu_profile()
    work = Path(options.work_dir or tempfile.mkdtemp(prefix="voicemesh-bench-e2e-"))
    await asyncio.to_thread(work.mkdir, parents=True, exist_ok=True)
    utterances = await asyncio.to_thread(make_utterances, options.utterances, work)
    for u in utterances:
        report(f"utterance {u.text!r}: {u.seconds:.1f} s (speech ends at {u.speech_end_s:.2f} s)")
    samples: list[Sample] = []

    def result(partial: bool) -> dict[str, Any]:
        levels = summarize(samples)
        out = as_json(
            levels, samples, table=table(levels, samples), partial=partial,
            options=dataclasses.asdict(options), work_dir=str(work),
            utterances=[{"text": u.text, "seconds": u.seconds} for u in utterances],
        )  # fmt: skip
        if options.json_out:  # after every pass: a long run stopped half-way keeps what it measured
            _write_json(Path(options.json_out), out)
        return out

    async with voicemesh_stack(options, profile, work, report) as stack:
        if options.warm_up:
            report("warm-up: one voicemesh turn and one Pipecat turn (not counted)")
            await voicemesh_pass(stack, utterances[:1], options, 1, -1)
            await pipecat_pass(stack.llm_url, profile, utterances[:1], options, 1, -1, work)
        for callers in options.callers:
            for p in range(options.passes):
                vm = await voicemesh_pass(stack, utterances, options, callers, p)
                report(f"{callers} caller(s), pass {p + 1}/{options.passes}, voicemesh: {_line(vm)}")
                pc = await pipecat_pass(stack.llm_url, profile, utterances, options, callers, p, work)
                report(f"{callers} caller(s), pass {p + 1}/{options.passes}, pipecat:   {_line(pc)}")
                samples += vm + pc
                result(partial=True)
    final = result(partial=False)
    if options.json_out:
        report(f"wrote {options.json_out}")
    return final


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2))
