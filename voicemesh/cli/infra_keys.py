"""``voicemesh infra rotate-key``: a new region key (or, with ``--metrics``, a new metrics credential
for the scraper); the one it replaces stays accepted until nothing it signed can still be valid."""

from __future__ import annotations

from pathlib import Path

import click

from voicemesh.cli.common import console, die_on_voicemesh_error
from voicemesh.cli.environments import region_keys_path
from voicemesh.cli.infra import infra
from wire.errors import VoicemeshError
from wire.region_keys import (
    LEEWAY_S,
    MAX_TOKEN_TTL_S,
    METRICS_OVERLAP_S,
    Rotation,
    metrics_token_path,
    rotate_key_set,
    rotate_metrics_credential,
)


@infra.command("rotate-key")
@click.option(
    "--activate-in", "activate_in_s", type=click.FloatRange(min=0), default=0.0, show_default=True,
    help="Seconds before edges sign with the new key: how long the file takes to reach every region "
    "(0 locally; ~120 for a Kubernetes Secret). With --metrics: added to the old credential's overlap.",
)  # fmt: skip
@click.option("--keys", "keys_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Key file (default: the local deployment's).")  # fmt: skip
@click.option("--metrics", is_flag=True, help="Rotate the scraper's metrics credential instead of the keys.")
@click.option("--metrics-token", "token_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the new metrics secret is written (default: beside the key file, "
              "KEYS.metrics-token).")  # fmt: skip
def rotate_key(activate_in_s: float, keys_file: Path | None, metrics: bool, token_file: Path | None) -> None:
    """Add a region key; the one it replaces is accepted until no token it signed can be valid.

    Regions and edges re-read the file on change: no restart. Keys already retired are dropped.
    With --metrics, add a metrics credential instead (its hash to the key file, its secret to
    --metrics-token); the old one stays accepted while the scraper picks up the new secret."""
    target = keys_file or region_keys_path()
    if metrics:
        _rotate_metrics(target, token_file or metrics_token_path(target), METRICS_OVERLAP_S + activate_in_s)
        return
    try:
        rotation = rotate_key_set(target, activate_in_s=activate_in_s)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    console.print(
        f"added key [bold]{rotation.added}[/bold] to {target} (edges sign with it in {activate_in_s:g} s)"
    )
    _print_retirements(rotation, activate_in_s + MAX_TOKEN_TTL_S + LEEWAY_S)


def _rotate_metrics(keys: Path, token_file: Path, overlap_s: float) -> None:
    try:
        rotation = rotate_metrics_credential(keys, token_file, overlap_s=overlap_s)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    console.print(
        f"added metrics credential [bold]{rotation.added}[/bold]: its hash to {keys}, its secret to "
        f"{token_file} (0600). Update the regions' key set first, then the scraper's secret."
    )
    _print_retirements(rotation, overlap_s)


def _print_retirements(rotation: Rotation, grace_s: float) -> None:
    for kid in rotation.retiring:
        console.print(f"retiring {kid}: accepted for {grace_s:.0f} s more, dropped by the next rotation")
    for kid in rotation.dropped:
        console.print(f"dropped {kid} (retired)")
