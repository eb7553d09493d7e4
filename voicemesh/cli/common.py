"""The root command group, shared options and output helpers used by every command module."""

from __future__ import annotations

import sys
from typing import NoReturn

import click
from rich.console import Console

from voicemesh import __version__
from wire.errors import VoicemeshError

console = Console(stderr=True, highlight=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="voicemesh")
def cli() -> None:
    """voicemesh: real-time voice AI across edge and regional tiers."""


@cli.group()
def bench() -> None:
    """Benchmarks that print figures (see docs/benchmarks.md)."""


profile_option = click.option(
    "--profile",
    type=click.Choice(["cpu", "gpu"]),
    default=None,
    help="Model profile (default: $VOICEMESH_PROFILE or cpu).",
)


def progress(line: str) -> None:
    console.print(f"[cyan]›[/cyan] {line}")


def fail(message: str, *, code: int = 1) -> NoReturn:
    console.print(f"[bold red]error:[/bold red] {message}")
    sys.exit(code)


def die_on_voicemesh_error(exc: VoicemeshError) -> NoReturn:
    fail(f"{exc.message} [{exc.code}]")
