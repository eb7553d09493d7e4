"""``voicemesh bench router``: failover gap and routing-decision cost against real local regions."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import click

from voicemesh.cli.common import bench, fail, progress
from wire.errors import VoicemeshError


@bench.command("router")
@click.option(
    "--llm-url",
    default=lambda: os.environ.get("VOICEMESH_LLM_URL", ""),
    help="OpenAI-compatible vLLM the regions share (…/v1; default $VOICEMESH_LLM_URL).",
)
@click.option("--trials", default=5, show_default=True, type=int, help="Turns per scenario.")
@click.option(
    "--prompt",
    default="Describe Paris in three short sentences.",
    show_default=True,
    help="Each turn's text.",
)
@click.option("--max-tokens", default=60, show_default=True, type=int)
def bench_router(llm_url: str, trials: int, prompt: str, max_tokens: int) -> None:
    """Failover gap (crash, hang) next to normal time to first audio, and routing-decision cost."""
    from voicemesh.bench.regions import LocalRegion
    from voicemesh.bench.router import run_bench, summarize

    if not llm_url:
        fail("no LLM: pass --llm-url http://127.0.0.1:8100/v1 (start one with `voicemesh llm serve`)")
    log_dir = Path(tempfile.mkdtemp(prefix="voicemesh-bench-router-"))
    regions = [LocalRegion(f"bench-{name}", llm_url, log_dir) for name in ("a", "b")]

    async def main() -> str:
        try:
            progress(f"starting {len(regions)} local regions (logs in {log_dir})")
            await asyncio.gather(*(r.start() for r in regions))
            result = await run_bench(
                regions, trials=trials, prompt=prompt, max_tokens=max_tokens, report=progress
            )
            return summarize(result)
        finally:
            await asyncio.gather(*(r.stop() for r in regions))

    try:
        summary = asyncio.run(main())
    except (RuntimeError, VoicemeshError) as exc:
        fail(str(exc))
    click.echo(summary)
