"""``voicemesh fuzz``: generated bad input against a running edge and/or region (docs/security.md)."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import click

from voicemesh.cli.common import cli, console, fail, progress
from wire.region_auth import KEYS_ENV


@cli.command("fuzz")
@click.option(
    "--edge",
    "edge_url",
    default=None,
    metavar="URL",
    help="An edge, or the front door before the edges: http://127.0.0.1:8080.",
)
@click.option(
    "--api-key",
    envvar="VOICEMESH_API_KEY",
    default=None,
    help="A client API key of that edge (default $VOICEMESH_API_KEY).",
)
@click.option("--region", "region_url", default=None, metavar="URL", help="A region: http://127.0.0.1:9001.")
@click.option(
    "--region-keys",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=lambda: os.environ.get(KEYS_ENV) or None,
    help=f"The region key set that signs turns (default ${KEYS_ENV}); without it only bad "
    "tokens reach the region.",
)
@click.option(
    "--only",
    type=click.Choice(["events", "http", "turns"]),
    multiple=True,
    help="Run only these fuzzers (repeatable; default: every one its target allows).",
)
@click.option(
    "--cases",
    default=200,
    show_default=True,
    type=click.IntRange(1),
    help="Generated cases per fuzzer, at most.",
)
@click.option(
    "--seconds",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Time for the whole run, shared by the fuzzers (shrinking a failure may add to it).",
)
@click.option(
    "--seed", default=None, type=click.IntRange(0), help="Replay a run (default: a new one, printed)."
)
@click.option(
    "--timeout",
    "timeout_s",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="Seconds one case may take before it counts as a hang.",
)
def fuzz(
    edge_url: str | None, api_key: str | None, region_url: str | None, region_keys: Path | None,
    only: tuple[str, ...], cases: int, seconds: float, seed: int | None, timeout_s: float,
) -> None:  # fmt: skip
    """Fuzz a running edge (Realtime events, HTTP) and region (turn protocol): exit 1 on any hang,
    5xx, server_error or unclear error, each shown with its minimal reproducer."""
    try:
        from voicemesh.fuzz import EdgeTarget, NotServing, RegionTarget, run
    except ModuleNotFoundError as exc:
        if exc.name != "hypothesis":
            raise
        fail("voicemesh fuzz needs Hypothesis: pip install 'voicemesh[fuzz]'", code=2)
    if edge_url is None and region_url is None:
        fail(
            "nothing to fuzz: pass --edge URL (with --api-key) and/or --region URL (with --region-keys)",
            code=2,
        )
    if edge_url is not None and not api_key:
        fail("--edge needs a client API key: pass --api-key (`voicemesh up` prints one)", code=2)
    seed = random.randrange(2**31) if seed is None else seed
    edge = EdgeTarget(edge_url, api_key or "") if edge_url else None
    region = RegionTarget(region_url, region_keys) if region_url else None
    progress(f"seed {seed} (replay with --seed {seed})")
    try:
        report = run(
            edge=edge, region=region, fuzzers=only or ("events", "http", "turns"), cases=cases,
            seconds=seconds, seed=seed, timeout_s=timeout_s, report=progress,
        )  # fmt: skip
    except NotServing as exc:
        fail(f"{exc} (start it, or check the URL)", code=2)
    console.print(report.summary(), markup=False, highlight=False, soft_wrap=True)
    sys.exit(0 if report.ok else 1)
