"""``voicemesh drill SCENARIO`` and ``voicemesh load``: rehearse failures, measure capacity.

Composition only: ``voicemesh.drills`` does the work; this module finds the local deployment (the
registry ``voicemesh infra up`` writes, the edge ``voicemesh up`` starts, its API key), restores
killed regions through the infra tier's Terraform environment, and prints and files the reports.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.table import Table

from voicemesh import paths
from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, progress
from voicemesh.cli.environments import infra_up, region_keys_path, registry_path
from voicemesh.drills.caller_state import CallerSettings, EdgeTarget
from voicemesh.drills.chaos import ChaosConfig
from voicemesh.drills.chaos_scenario import chaos_scenario, chaos_turns
from voicemesh.drills.console import LiveProgress, load_table, summary_table
from voicemesh.drills.deployment import Deployment, Report, run_command, voicemesh_bin
from voicemesh.drills.drill_context import FaultParams
from voicemesh.drills.report import write_load_report, write_report
from voicemesh.drills.runner import DrillResult, run_drill, run_load
from voicemesh.drills.scenarios import SCENARIOS, Scenario
from voicemesh.drills.slo import Slo, missed
from wire.errors import VoicemeshError
from wire.region_auth import ClientAuth

ENV = "local"


def _api_key(given: str | None) -> str:
    if given:
        return given
    if os.environ.get("VOICEMESH_API_KEY"):
        return os.environ["VOICEMESH_API_KEY"]
    from voicemesh.cli.deploy import api_key  # the key `voicemesh up` made and gave the edge

    return api_key()


def _admin_key() -> str:
    if os.environ.get("VOICEMESH_ADMIN_KEY"):
        return os.environ["VOICEMESH_ADMIN_KEY"]
    from voicemesh.cli.deploy import admin_key  # the drill reads the edge's /status (admin scope)

    return admin_key()


def _deployment(edge_url: str, api_key: str | None, registry: Path | None, llm_url: str | None) -> Deployment:
    reg = registry or registry_path()

    async def start(report: Report) -> None:
        command = [voicemesh_bin(), "up", "--detach", *(["--llm-url", llm_url] if llm_url else [])]
        report(f"starting the local deployment: {shlex.join(command)}")
        await run_command(command, 900.0)

    async def restore(report: Report) -> None:
        await infra_up(ENV, {}, reg, report)

    return Deployment(
        EdgeTarget(edge_url, _api_key(api_key), _admin_key()),
        reg,
        env=ENV,
        start=start,
        restorer=restore,
        region_auth=ClientAuth.from_paths(region_keys_path()),
    )


def _out_dir(given: Path | None, name: str) -> Path:
    return given or paths.state_dir() / "drills" / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"


edge_options = [
    click.option("--edge-url", default="http://127.0.0.1:8080", show_default=True, help="The edge to call."),
    click.option(
        "--api-key", default=None, help="Edge API key (default: $VOICEMESH_API_KEY or `voicemesh up`'s)."
    ),
    click.option(
        "--registry", type=click.Path(path_type=Path), default=None, help="Region registry to read."
    ),
    click.option("--llm-url", default=None, help="When the deployment must be started: share this LLM."),
    click.option("--out", type=click.Path(path_type=Path), default=None, help="Report folder."),
    click.option("--turn-timeout", default=90.0, show_default=True, help="Seconds a turn may take."),
]


F = TypeVar("F", bound=Callable[..., None])
R = TypeVar("R")


def _with_edge_options(f: F) -> F:
    for option in reversed(edge_options):
        f = option(f)
    return f


@cli.command("drill")
@click.argument("scenario", type=click.Choice(sorted([*SCENARIOS, "chaos"])))
@click.option(
    "--callers", default=2, show_default=True, help="Concurrent callers (region-saturated: derived)."
)
@click.option("--turns", default=3, show_default=True, help="Turns per caller.")
@click.option("--at-turn", default=2, show_default=True, help="Fault fires during this turn.")
@click.option(
    "--at",
    "at_moment",
    type=click.Choice(["first_text", "first_audio"]),
    default="first_text",
    show_default=True,
    help="The moment of that turn: its first words (region still working) or its first audio.",
)
@click.option("--hold", "hold_s", default=8.0, show_default=True, help="Seconds the fault lasts.")
@click.option("--latency-ms", default=600, show_default=True, help="region-slow: added per chunk, each way.")
@click.option("--flaps", default=3, show_default=True, help="region-flap: down/up cycles.")
@click.option("--max-lost", default=0, show_default=True, help="SLO: lost turns allowed.")
@click.option("--max-failover-gap", default=4.0, show_default=True, help="SLO: seconds from fault to audio.")
@click.option("--max-fault-p95-ttfa", default=8.0, show_default=True, help="SLO: p95 TTFA during the fault.")
@click.option("--max-degraded", type=int, default=None, help="SLO: edge-voiced turns allowed (default: any).")
@click.option("--max-duration", default=600.0, show_default=True, help="Hard stop, seconds.")
@click.option("--minutes", default=5.0, show_default=True, help="chaos: how long faults are drawn for.")
@click.option("--seed", type=int, default=None, help="chaos: the schedule's seed (default: random).")
@click.option("--max-faults", default=40, show_default=True, help="chaos: at most this many faults.")
@_with_edge_options
def drill(
    scenario: str,
    callers: int,
    turns: int,
    at_turn: int,
    at_moment: str,
    hold_s: float,
    latency_ms: int,
    flaps: int,
    max_lost: int,
    max_failover_gap: float,
    max_fault_p95_ttfa: float,
    max_degraded: int | None,
    max_duration: float,
    minutes: float,
    seed: int | None,
    max_faults: int,
    edge_url: str,
    api_key: str | None,
    registry: Path | None,
    llm_url: str | None,
    out: Path | None,
    turn_timeout: float,
) -> None:
    """Rehearse a failure against the local deployment: callers talk, a fault hits mid-answer,
    and every turn is measured. Exits 1 naming each missed SLO.

    \b
    Scenarios (docs/drills.md shows a report of each):
      region-crash      SIGKILL the busiest region mid-answer; Terraform restarts it
      llm-crash         SIGKILL the serving region's LLM (vLLM) mid-answer; Terraform restarts it
      region-hang       SIGSTOP the busiest region mid-answer, SIGCONT after --hold
      region-slow       a loopback fault proxy adds latency in front of the busiest region
      region-flap       the busiest region refuses and drops connections, --flaps times
      all-regions-down  every region refuses: the edge voice answers, then regions recover
      region-saturated  more callers than capacity: queueing and overflow to another region
      edge-crash        SIGKILL the edge serving a caller mid-answer; callers resume on another
      edge-drain        rolling restart (SIGTERM: graceful drain) of every edge; callers resume
      redis-down        the session store's Redis dies mid-answer; then resume is checked again
      chaos             random faults of every kind for --minutes, overlapping (--seed replays)
    (edge drills start two edges of their own, sharing a throwaway redis-server, behind a balancer)
    """
    if scenario == "chaos":
        spec, turns, max_duration = _chaos(minutes, seed, max_faults, max_duration)
    elif not 1 <= at_turn <= turns:
        fail(f"--at-turn must be between 1 and --turns ({turns})")
    else:
        spec = SCENARIOS[scenario]
    folder = _out_dir(out, scenario)
    result: DrillResult = _run_live(
        scenario,
        lambda: _deployment(edge_url, api_key, registry, llm_url),
        lambda deployment, live: run_drill(
            spec,
            deployment,
            callers=callers,
            caller_settings=CallerSettings(turns=turns, turn_timeout_s=turn_timeout),
            params=FaultParams(
                at_turn=at_turn,
                at_moment=at_moment,
                hold_s=hold_s,
                latency_s=latency_ms / 1000,
                flaps=flaps,
            ),
            slo=Slo(max_lost, max_failover_gap, max_fault_p95_ttfa, max_degraded),
            speech_dir=_speech_dir(),
            report=progress,
            max_duration_s=max_duration,
            on_state=live.on_state,
        ),
    )
    files = write_report(result, folder, command=shlex.join(["voicemesh", "drill", *sys.argv[2:]]))
    _print_report(summary_table(result), files)
    misses = missed(result.verdicts)
    if misses:
        fail("missed SLO: " + "; ".join(f"{v.name} ({v.objective}: {v.measured})" for v in misses))
    console.print("[green]all SLOs met[/green]")


def _chaos(
    minutes: float, seed: int | None, max_faults: int, max_duration: float
) -> tuple[Scenario, int, float]:
    """The chaos scenario, its callers' turns and its hard stop (the window plus time to wind down)."""
    if minutes <= 0 or max_faults < 1:
        fail("--minutes must be > 0 and --max-faults >= 1")
    config = ChaosConfig(seed=secrets.randbelow(1_000_000) if seed is None else seed, minutes=minutes,
                         max_faults=max_faults)  # fmt: skip
    progress(f"chaos: seed {config.seed} (replay with --seed {config.seed})")
    return chaos_scenario(config), chaos_turns(config), max(max_duration, config.window_s + 300.0)


def _speech_dir() -> Path:
    return paths.state_dir() / "drills" / "speech"


def _run_live(
    name: str,
    deployment: Callable[[], Deployment],
    run: Callable[[Deployment, LiveProgress], Coroutine[Any, Any, R]],
) -> R:
    """Run a drill or load run under the live progress line; a voicemesh error ends the command."""
    live = LiveProgress(name, console)
    try:
        found = deployment()
        with live:
            return asyncio.run(run(found, live))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)


def _print_report(table: Table, files: dict[str, Path]) -> None:
    console.print(table)
    console.print(f"report: {files['md']}  ({files['json'].name}, {files['png'].name})")


@cli.command("load")
@click.option(
    "--callers", default=4, show_default=True, help="Most concurrent callers (1, 2, 4, … up to it)."
)
@click.option("--turns", default=2, show_default=True, help="Turns per caller at each level.")
@click.option("--levels", default=None, help="Comma-separated concurrency levels instead of doubling.")
@_with_edge_options
def load(
    callers: int,
    turns: int,
    levels: str | None,
    edge_url: str,
    api_key: str | None,
    registry: Path | None,
    llm_url: str | None,
    out: Path | None,
    turn_timeout: float,
) -> None:
    """Capacity planning: the same callers without faults, at increasing concurrency
    (sessions, turns per second, TTFA p50/p95/p99 versus concurrency)."""
    try:
        steps_at = [int(x) for x in levels.split(",")] if levels else None
    except ValueError:
        fail(f"--levels must be comma-separated integers, not {levels!r}")
    steps = _run_live(
        "load",
        lambda: _deployment(edge_url, api_key, registry, llm_url),
        lambda deployment, live: run_load(
            deployment,
            max_callers=callers,
            caller_settings=CallerSettings(turns=turns, turn_timeout_s=turn_timeout),
            speech_dir=_speech_dir(),
            report=progress,
            levels=steps_at,
            on_state=live.on_state,
        ),
    )
    files = write_load_report(
        steps, _out_dir(out, "load"), command=shlex.join(["voicemesh", "load", *sys.argv[2:]])
    )
    _print_report(load_table(steps), files)
