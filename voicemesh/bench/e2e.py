"""``voicemesh bench e2e``: end of the caller's speech to the first audio back, voicemesh next to a
stock Pipecat pipeline on the same models, the same prompt and the same utterances.

voicemesh: vLLM (started here, or ``--llm-url``), one ``voicemesh region serve`` and one
``voicemesh edge serve`` as processes (``LocalRegion``, ``EdgeProcess``); each caller is the stock
``openai`` SDK's Realtime client (``voicemesh.realtime``) sending 40 ms appends at real-time pace,
with ``turn_detection`` ``server_vad`` or ``semantic_vad``. Pipecat: ``voicemesh.bench.e2e_pipecat``,
one stock pipeline per caller in a process of its own, on the same vLLM, Whisper directory, Kokoro
model, voice file and voice, in its default turn mode (Smart Turn v3) or VAD-only. Passes alternate
(voicemesh server_vad, pipecat smart_turn, voicemesh semantic_vad, pipecat vad_only, ...) at each
concurrency, so load from anything else on the machine hits all alike.

Turns are espeak-ng speech in several voices, made at run time, some with a thinking pause
mid-sentence, some with a backchannel during the answer (``e2e_inputs``); every side is held to
the same rules (``e2e_turns``): time to first audio, paused sentences cut, backchannels that stopped
an answer, mid-answer silence as the caller hears it, and the transcript's word error.

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

from voicemesh.bench.e2e_inputs import SYSTEM_PROMPT, E2eOptions, Utterance, caller_order, make_turns
from voicemesh.bench.e2e_report import MODES, Sample, as_json, summarize
from voicemesh.bench.e2e_table import table
from voicemesh.bench.e2e_voicemesh import VoicemeshStack, voicemesh_pass, voicemesh_stack
from voicemesh.processes import log_tail, spawn, stop_async
from voicemesh.profiles import Profile, cpu_profile
from wire.errors import VoicemeshError

Report = Callable[[str], None]


# --- Pipecat: stock pipelines in a process of their own --------------------------------------------


def pipecat_available() -> bool:
    return importlib.util.find_spec("pipecat") is not None


async def pipecat_pass(
    llm_url: str, profile: Profile, utterances: Sequence[Utterance], options: E2eOptions, mode: str,
    callers: int, pass_no: int, work: Path,
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
        "mode": mode,
        "utterances": [
            (u.text, str(u.wav16), u.speech_end_s, u.paused, u.backchannel, str(u.backchannel_wav16 or ""))
            for u in utterances
        ],
        "orders": [caller_order(i, len(utterances)) for i in range(callers)],
    }
    name = f"pipecat-{mode}-{callers}-{pass_no}"
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
    unknown = [m for m in options.modes if m not in MODES]
    if unknown:
        raise VoicemeshError(f"unknown turn mode(s) {unknown}: choose from {', '.join(MODES)}")
    utterances = await asyncio.to_thread(make_turns, options.utterances, work)
    for u in utterances:
        extra = (", paused" if u.paused else "") + (f", then {u.backchannel!r}" if u.backchannel else "")
        report(f"turn {u.text!r}: {u.seconds:.1f} s (speech ends at {u.speech_end_s:.2f} s{extra})")
    samples: list[Sample] = []

    def result(partial: bool) -> dict[str, Any]:
        levels = summarize(samples)
        out = as_json(
            levels, samples, table=table(levels, samples, options.command), partial=partial,
            options=dataclasses.asdict(options), work_dir=str(work),
            utterances=[{"text": u.text, "seconds": u.seconds} for u in utterances],
        )  # fmt: skip
        if options.json_out:  # after every pass: a long run stopped half-way keeps what it measured
            _write_json(Path(options.json_out), out)
        return out

    async def one_pass(
        stack: VoicemeshStack, turns: Sequence[Utterance], mode: str, callers: int, pass_no: int
    ) -> list[Sample]:
        if MODES[mode] == "voicemesh":
            return await voicemesh_pass(stack, turns, options, mode, callers, pass_no)
        return await pipecat_pass(stack.llm_url, profile, turns, options, mode, callers, pass_no, work)

    async with voicemesh_stack(options, profile, work, report) as stack:
        if options.warm_up:
            report("warm-up: one turn per mode (not counted)")
            for mode in options.modes:
                await one_pass(stack, utterances[:1], mode, 1, -1)
        for callers in options.callers:
            for p in range(options.passes):
                for mode in options.modes:
                    got = await one_pass(stack, utterances, mode, callers, p)
                    at = f"{callers} caller(s), pass {p + 1}/{options.passes}"
                    report(f"{at}, {MODES[mode]} {mode}: {_line(got)}")
                    samples += got
                    result(partial=True)
    final = result(partial=False)
    if options.json_out:
        report(f"wrote {options.json_out}")
    return final


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2))
