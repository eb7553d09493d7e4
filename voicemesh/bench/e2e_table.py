"""``voicemesh bench e2e``'s printed summary: a markdown table (for docs/benchmarks.md) of the
figures ``e2e_report`` computed, one row per concurrency and turn mode."""

from __future__ import annotations

from collections.abc import Sequence

from voicemesh.bench.e2e_report import (
    BASELINE,
    PIPECAT_DEFAULT,
    LevelFigures,
    Sample,
    median_stages,
    misses,
    target,
)


def _f(x: float, spec: str = ".2f") -> str:
    return "-" if x != x else format(x, spec)


def table(levels: Sequence[LevelFigures], samples: Sequence[Sample] = (), command: str = "") -> str:
    """The printed summary, a markdown table: one row per concurrency and mode, time to first audio
    and its ratio to Pipecat VAD-only, paused sentences cut, backchannels that stopped an answer,
    mid-answer silence and word error; then where voicemesh's time went and any errors."""
    lines = [
        "End of speech -> first audio and turn-taking, voicemesh (edge, openai SDK) vs stock Pipecat, "
        "same run, same models, alternating passes" + (f": `{command}`" if command else ""),
        "",
        "| callers | system | mode | answered | TTFA p50 s | TTFA p95 s | ratio p50 | ratio p95 "
        "| paused cut | backchannel stopped | silence p50 s | longest silence s | WER | targets |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for lv in levels:
        for name, f in lv.modes.items():
            system, mode = name.split(" ")
            missed = misses(lv, name) if system == "voicemesh" else []
            verdict = (
                "" if system != "voicemesh" else ("met" if not missed else "missed: " + ", ".join(missed))
            )
            lines.append(
                f"| {lv.callers} | {system} | {mode} | {f.answered}/{f.turns} "
                f"| {_f(f.p50_s)} | {_f(f.p95_s)} "
                f"| {_f(lv.ratio(name, 'p50_s'))} | {_f(lv.ratio(name, 'p95_s'))} | {f.cut}/{f.paused} "
                f"| {f.backchannel_stops}/{f.backchannels} | {_f(f.silence_p50_s)} "
                f"| {_f(f.silence_longest_s)} | {_f(f.wer, '.1%')} | {verdict} |"
            )
    lines.append(
        f"\nRatios: to {BASELINE} at the same concurrency. Targets (voicemesh): no paused sentence cut and "
        f"no more than {PIPECAT_DEFAULT}; no backchannel stopping an answer; TTFA ratio <= "
        f"{target(1)} with 1 caller, <= {target(2)} above; mid-answer silence no more than Pipecat's."
    )
    for lv in levels:
        stages = median_stages([s for s in samples if s.callers == lv.callers and s.side == "voicemesh"])
        if stages:
            where = ", ".join(f"{name} {ms:.0f}" for name, ms in stages.items())
            lines.append(f"{lv.callers} caller(s), voicemesh stages, p50 ms: {where}")
    for lv in levels:
        for name, f in lv.modes.items():
            for err in f.errors:
                lines.append(f"{name} at {lv.callers} caller(s): {err}")
    return "\n".join(lines)
