"""Entry point: ``voicemesh``. Sub-commands register themselves from their modules."""

from __future__ import annotations

import importlib
import logging

import click

from voicemesh import __version__
from voicemesh.cli.common import cli, fail
from wire import log_context

# Modules that add commands to ``cli`` (and to ``bench``) when imported.
_COMMAND_MODULES = (
    "models",
    "llm",
    "region",
    "edge",
    "router",
    "infra",
    "infra_keys",
    "deploy",
    "drill",
    "keys",
    "bench_e2e",
    "image",
    "bench_edge_kill",
    "bench_transports",
    "fuzz",
)


def _register() -> None:
    for name in _COMMAND_MODULES:
        try:
            importlib.import_module(f"voicemesh.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"voicemesh.cli.{name}":
                raise


def main() -> None:
    # From the environment first (a bad value is said before anything runs); ``--log-format`` may
    # change it as the root command starts (voicemesh/cli/common.py).
    try:
        log_context.configure(log_context.log_format())
    except ValueError as exc:
        fail(str(exc))
    # One line per health probe (httpx) or per transcription (faster-whisper) drowns what matters;
    # keep their warnings.
    for noisy in ("httpx", "faster_whisper", "aioice"):  # aioice: a line per ICE candidate pair
        logging.getLogger(noisy).setLevel(logging.WARNING)
    _register()
    cli(prog_name="voicemesh")


__all__ = ["__version__", "click", "main"]


if __name__ == "__main__":
    main()
