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

The inputs both sides get are ``voicemesh.bench.e2e_inputs``; the voicemesh side is
``voicemesh.bench.e2e_voicemesh``; this module runs the Pipecat side's passes and the whole bench.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from voicemesh.bench.e2e_inputs import SYSTEM_PROMPT, E2eOptions, Utterance, caller_order, make_utterances
from voicemesh.bench.e2e_report import Sample, as_json, summarize, table
from voicemesh.bench.e2e_voicemesh import voicemesh_pass, voicemesh_stack
from voicemesh.processes import log_tail, spawn, stop_async
from voicemesh.profiles import Profile, cpu_profile
from wire.errors import VoicemeshError

Report = Callable[[str], None]


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
