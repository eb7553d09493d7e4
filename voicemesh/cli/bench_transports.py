"""``voicemesh bench transports``: time to first audio through the WebSocket, WebRTC and a Twilio Media
Stream, side by side on one stack (docs/benchmarks.md, "Transports")."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import click

from voicemesh.cli.common import bench, fail, profile_option, progress, run_until_signal
from wire.tasks import Stopped, unless_stopped


@bench.command("transports")
@click.option(
    "--llm-url",
    default=lambda: os.environ.get("VOICEMESH_LLM_URL") or None,
    help="A running vLLM (…/v1) (default: $VOICEMESH_LLM_URL, else start one).",
)
@click.option("--passes", default=2, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--utterances", "n_utterances", default=4, show_default=True, type=click.IntRange(min=1, max=12),
    help="Utterances per pass, each spoken once through every transport.",
)  # fmt: skip
@click.option("--max-output-tokens", default=60, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--json", "json_out", default=None, type=click.Path(dir_okay=False), help="Write every turn here."
)
@profile_option
def bench_transports(
    llm_url: str | None, passes: int, n_utterances: int, max_output_tokens: int, json_out: str | None,
    profile: str | None,
) -> None:  # fmt: skip
    """End of speech to first audio heard: WebSocket vs WebRTC vs Twilio Media Streams, one run."""
    from voicemesh.bench.transports import TransportOptions, run_transports
    from voicemesh.profiles import load_profile

    options = TransportOptions(llm_url, passes, n_utterances, max_output_tokens)

    async def main(stop: asyncio.Event) -> None:
        try:
            result = await unless_stopped(run_transports(options, load_profile(profile), progress), stop)
        except Stopped:
            fail("benchmark interrupted: every process it started is stopped", code=130)
        if json_out:
            Path(json_out).write_text(json.dumps(result, indent=2))  # noqa: ASYNC240 (once, at the end)
        click.echo(result["table"])

    run_until_signal(main)
