"""``voicemesh bench e2e``: end of speech to first audio, voicemesh vs a stock Pipecat pipeline; and
``voicemesh bench tts-contention``: what decoding beside Kokoro costs its first clause; and
``voicemesh bench stt-cuts``: how the transcript moves with where the edge cuts a turn;
``voicemesh bench backchannel-words``: short speech over an answer, heard as a backchannel or not; and
``voicemesh bench stt-window``: Whisper on a shorter encoder window, as accurate or not."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click

from voicemesh.cli.common import bench, fail, profile_option, progress, run_until_signal
from wire.tasks import Stopped, unless_stopped

T = TypeVar("T")

E2E_MODES = ("server_vad", "smart_turn", "semantic_vad", "vad_only")
"""``voicemesh.bench.e2e_report.MODES``, in the order each pass runs them (not imported from there:
the CLI imports no bench module until a bench runs)."""


def _print_result(work: Callable[[], Coroutine[Any, Any, T]], show: Callable[[T], str]) -> None:
    """Run a bench's ``work`` until it ends or Ctrl-C (stopped, it leaves nothing behind), then
    print ``show`` of its result."""

    async def main(stop: asyncio.Event) -> None:
        try:
            click.echo(show(await unless_stopped(work(), stop)))
        except Stopped:
            fail("benchmark interrupted", code=130)

    run_until_signal(main)


def _callers(value: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"a comma-separated list of counts (e.g. 1,2,4), not {value!r}") from None
    if not levels or min(levels) < 1:
        raise click.BadParameter("every count must be at least 1")
    return levels


@bench.command("e2e")
@click.option(
    "--llm-url",
    default=lambda: os.environ.get("VOICEMESH_LLM_URL") or None,
    help="A running vLLM (…/v1) both sides share (default: $VOICEMESH_LLM_URL, else start one).",
)
@click.option(
    "--callers", default="1,2,4", show_default=True, help="Concurrent callers, one level per count."
)
@click.option(
    "--passes", default=3, show_default=True, type=click.IntRange(min=1), help="Passes per side and level."
)
@click.option(
    "--utterances", "n_utterances", default=4, show_default=True, type=click.IntRange(min=1),
    help="Turns each caller speaks per pass (the bench has 16: paused and plain sentences, some "
    "with a backchannel).",
)  # fmt: skip
@click.option(
    "--modes", default=",".join(E2E_MODES), show_default=True,
    help="Turn modes to run: voicemesh's server_vad, semantic_vad; Pipecat's smart_turn, vad_only.",
)  # fmt: skip
@click.option(
    "--quick", is_flag=True,
    help="The smallest run that still measures everything: 1 caller, 1 pass, 1 turn (a paused "
    "sentence with a backchannel), no warm-up.",
)  # fmt: skip
@click.option("--max-output-tokens", default=60, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--json",
    "json_out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Write every figure and turn here.",
)
@profile_option
def bench_e2e(
    llm_url: str | None, callers: str, passes: int, n_utterances: int, modes: str, quick: bool,
    max_output_tokens: int, json_out: str | None, profile: str | None,
) -> None:  # fmt: skip
    """End of the caller's speech to first audio, paused sentences cut, backchannels, mid-answer
    silence and transcripts: voicemesh (edge, openai SDK; server_vad, semantic_vad) vs stock
    Pipecat (Smart Turn v3, VAD-only), side by side in one run."""
    from voicemesh.bench.e2e import run_e2e
    from voicemesh.bench.e2e_inputs import E2eOptions
    from voicemesh.profiles import load_profile

    try:
        levels = _callers(callers)
    except click.BadParameter as exc:
        fail(f"--callers: {exc.message}")
    wanted = tuple(m.strip() for m in modes.split(",") if m.strip())
    if not wanted or any(m not in E2E_MODES for m in wanted):
        fail(f"--modes: a comma-separated list from {', '.join(E2E_MODES)}, not {modes!r}")
    if quick:
        levels, passes, n_utterances = (1,), 1, 1
    options = E2eOptions(
        llm_url=llm_url, callers=levels, passes=passes, utterances=n_utterances, modes=wanted,
        max_output_tokens=max_output_tokens, json_out=json_out, warm_up=not quick,
        command=" ".join(["voicemesh", *sys.argv[1:]]),
    )  # fmt: skip

    async def main(stop: asyncio.Event) -> None:
        try:
            result = await unless_stopped(run_e2e(options, progress, load_profile(profile)), stop)
        except Stopped:
            fail(
                "benchmark interrupted: every process it started is stopped"
                + (f"; the passes done are in {json_out}" if json_out else ""),
                code=130,
            )
        click.echo(result["table"])

    run_until_signal(main)


@bench.command("tts-contention")
@click.option(
    "--llm-url",
    required=True,
    default=lambda: os.environ.get("VOICEMESH_LLM_URL") or None,
    help="A running vLLM (…/v1) to keep decoding (default: $VOICEMESH_LLM_URL).",
)
@click.option(
    "--wide", default=2, show_default=True, type=click.IntRange(1, 64), help="Threads to compare with 1."
)
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(min=1))
@profile_option
def bench_tts_contention(llm_url: str, wide: int, rounds: int, profile: str | None) -> None:
    """Kokoro on an opening clause alone and beside a decoding vLLM, at 1 and --wide threads."""
    from voicemesh.bench.tts_contention import run_tts_contention
    from voicemesh.profiles import load_profile

    p = load_profile(profile)
    _print_result(
        lambda: run_tts_contention(p.tts, p.llm, llm_url, wide=wide, rounds=rounds, report=progress), str
    )


@bench.command("stt-cuts")
@click.option("--utterances", "n_utterances", default=3, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--shifts", default=8, show_default=True, type=click.IntRange(1, 64),
    help="Start offsets per utterance, spread over one 32 ms VAD chunk.",
)  # fmt: skip
@profile_option
def bench_stt_cuts(n_utterances: int, shifts: int, profile: str | None) -> None:
    """The e2e bench's utterances through the edge's VAD cut and Whisper, the start shifted each time."""
    from voicemesh.bench.stt_cuts import format_cuts, run_stt_cuts
    from voicemesh.profiles import load_profile

    p = load_profile(profile)
    _print_result(
        lambda: run_stt_cuts(
            p.stt, p.edge.vad_model, utterances=n_utterances, shifts=shifts, report=progress
        ),
        format_cuts,
    )


def _windows(value: str) -> tuple[int, int]:
    try:
        a, b = (int(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"two frame counts, e.g. 3000,1500, not {value!r}") from None
    if not (1000 <= a <= 3000 and 1000 <= b <= 3000) or a == b:
        raise click.BadParameter("two different frame counts from 1000 to 3000 (3000: the whole window)")
    return a, b


@bench.command("stt-window")
@click.option(
    "--windows", default="3000,2000", show_default=True, callback=lambda _c, _p, v: _windows(v),
    help="The two encoder windows (mel frames) to compare, the reference first.",
)  # fmt: skip
@click.option("--sentences", default=40, show_default=True, type=click.IntRange(1, 40))
@click.option("--voices", default=4, show_default=True, type=click.IntRange(1, 4))
@click.option(
    "--shifts", default=2, show_default=True, type=click.IntRange(1, 8),
    help="Start offsets per utterance, spread over one 32 ms VAD chunk.",
)  # fmt: skip
@profile_option
def bench_stt_window(
    windows: tuple[int, int], sentences: int, voices: int, shifts: int, profile: str | None
) -> None:
    """Whisper on two encoder windows, paired on the same turns as the edge cuts them: WER, turns
    heard better and worse, and the difference's 95 % interval."""
    from voicemesh.bench.stt_window import format_window, run_stt_window
    from voicemesh.profiles import load_profile

    p = load_profile(profile)
    _print_result(
        lambda: run_stt_window(
            p.stt, p.edge.vad_model, windows=windows, sentences=sentences, voices=voices, shifts=shifts,
            report=progress,
        ),
        format_window,
    )  # fmt: skip


@bench.command("backchannel-words")
@click.option("--voices", default=6, show_default=True, type=click.IntRange(1, 6))
@click.option(
    "--rounds", default=3, show_default=True, type=click.IntRange(1, 20),
    help="Hearings of each clip with each prompt (Whisper samples again when it doubts its words).",
)  # fmt: skip
@profile_option
def bench_backchannel_words(voices: int, rounds: int, profile: str | None) -> None:
    """Short speech over an answer (backchannels, interruptions) through the edge's VAD cut and
    Whisper, with the backchannel prompt and without: which let the answer go on."""
    from edge.shared.settings import BackchannelSettings
    from voicemesh.bench.backchannel_words import format_backchannel_words, run_backchannel_words
    from voicemesh.profiles import load_profile

    p = load_profile(profile)
    prompt = BackchannelSettings().prompt
    _print_result(
        lambda: run_backchannel_words(
            p.stt, p.edge.vad_model, voices=voices, rounds=rounds, prompt=prompt, report=progress
        ),
        format_backchannel_words,
    )
