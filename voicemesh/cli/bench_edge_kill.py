"""``voicemesh bench edge-kill``: SIGKILL the edge serving an answer behind ``voicemesh up``'s front
door, and measure the silence a stock openai SDK client hears before the rest of the answer
(``voicemesh.drills.edge_kill``). Runs against the deployment ``voicemesh up`` left running."""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
from pathlib import Path

import click

from voicemesh.cli.common import bench, console, fail, progress
from voicemesh.drills.edge_kill import QUESTION, EdgeKillError, EdgeRef, KillRun, kill_mid_answer
from voicemesh.processes import ProcessStartError, wait_healthy


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


@bench.command("edge-kill")
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 50))
@click.option("--kill-after", "kill_after_s", default=1.5, show_default=True,
              help="Seconds of answer audio the client has received when the edge is killed.")  # fmt: skip
@click.option("--reconnect-delay", "reconnect_delay_s", type=float, default=None,
              help="The SDK's initial_delay (first back-off); default: the SDK's own (0.5 s).")  # fmt: skip
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None)
def edge_kill(runs: int, kill_after_s: float, reconnect_delay_s: float | None, json_out: Path | None) -> None:
    """Kill the edge serving an answer (SIGKILL), RUNS times; print the silence the caller heard."""
    from voicemesh.cli.deploy import ENV, admin_key, api_key
    from voicemesh.cli.environments import environment
    from voicemesh.drills.speech import synthesise

    deployment = environment(ENV, progress).deployment()
    if not deployment.frontdoor:
        fail("no front door is running here: start the deployment with `voicemesh up` first")
    pid_files = {p.name: p.pid_file for p in deployment.processes}
    edges = [EdgeRef(str(e["id"]), str(e["url"]), pid_files[f"edge-{e['id']}"]) for e in deployment.edges]
    if len(edges) < 2:
        fail("the front door has one edge: `voicemesh up --edges 2` (or more) to have one to fail over to")
    url = "ws" + str(deployment.frontdoor["url"])[4:] + "/v1"
    speech = synthesise(QUESTION, "en-us", Path(tempfile.gettempdir()) / "voicemesh-speech")
    results: list[KillRun] = []
    health = f"{deployment.frontdoor['stats_url']}/health"
    for i in range(runs):
        # Every edge up behind the front door first (the supervisor brings the last killed one back):
        # with one edge left, the kill would measure the wait for it instead of a failover.
        try:
            asyncio.run(wait_healthy(
                health, timeout_s=300, ready=lambda r: r.json().get("edges_up") == len(edges),
                what="every edge behind the front door", interval_s=0.5,
            ))  # fmt: skip
            progress(f"run {i + 1}/{runs}: speaking through {url}, killing the serving edge mid-answer")
            run = asyncio.run(kill_mid_answer(
                url, api_key(), admin_key(), edges, speech.pcm,
                kill_after_audio_s=kill_after_s, reconnect_delay_s=reconnect_delay_s,
            ))  # fmt: skip
        except (EdgeKillError, ProcessStartError, TimeoutError) as exc:
            fail(f"run {i + 1}: {exc}; `voicemesh infra status` shows the deployment's state")
        results.append(run)
        console.print(
            f"  killed {run.killed}: silence {_fmt(run.silence_s)} s (raw gap {_fmt(run.raw_gap_s)} s, "
            f"longest after the kill {_fmt(run.longest_silence_s)} s; after the kill: session.created "
            f"+{_fmt(run.session_created_s)}, resumed +{_fmt(run.resumed_s)}, response.created "
            f"+{_fmt(run.after_kill.get('response.created'))}, "
            f"first audio +{_fmt(run.continuation_audio_s)} s); "
            f"{run.status}; continuation: {run.continuation.strip()[:60]!r}"
        )
    silences = [r.silence_s for r in results if r.silence_s is not None]
    raws = [r.raw_gap_s for r in results if r.raw_gap_s is not None]
    if silences:
        console.print(
            f"[bold]silence heard after an edge's SIGKILL[/bold] over {len(silences)} run(s): "
            f"median {statistics.median(silences):.2f} s, max {max(silences):.2f} s "
            f"(raw gap median {statistics.median(raws):.2f} s, max {max(raws):.2f} s)"
        )
    if json_out:
        json_out.write_text(json.dumps([r.to_json() for r in results], indent=1))
    if any(r.status != "completed" or not r.resumed for r in results):
        fail("an answer did not go on after the kill (see above)")
