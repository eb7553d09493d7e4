"""The root command group, shared options and output helpers used by every command module."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import NoReturn

import click
import uvloop
from rich.console import Console
from rich.markup import escape

from voicemesh import __version__
from wire import log_context
from wire.errors import VoicemeshError

console = Console(stderr=True, highlight=False)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="voicemesh")
@click.option(
    "--log-format", type=click.Choice(log_context.FORMATS, case_sensitive=False),
    envvar=log_context.FORMAT_ENV, default="text", show_default=True,
    help="Log lines as readable text, or one JSON object a line (docs/observability.md).",
)  # fmt: skip
def cli(log_format: log_context.LogFormat) -> None:
    """voicemesh: real-time voice AI across edge and regional tiers."""
    log_context.configure(log_format)
    os.environ[log_context.FORMAT_ENV] = log_format  # the tiers this command starts log alike


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
    # Lines carry paths, URLs and tools' own messages ("[file:53]"): text, never markup.
    console.print(f"[cyan]›[/cyan] {escape(line)}", soft_wrap=True)  # a line, never cut: logs are grepped


def fail(message: str, *, code: int = 1) -> NoReturn:
    console.print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True)
    sys.exit(code)


def die_on_voicemesh_error(exc: VoicemeshError) -> NoReturn:
    fail(f"{exc.message} [{exc.code}]")


def run_until_signal(main: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run ``main(stop)`` until SIGINT/SIGTERM sets ``stop``; voicemesh errors end the command cleanly."""

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)

    try:
        # uvloop: less asyncio overhead per WebSocket frame for the servers (docs/benchmarks.md, Edge).
        uvloop.run(runner())
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
