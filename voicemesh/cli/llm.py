"""``voicemesh llm serve``: a vLLM server that several local regions can share."""

from __future__ import annotations

import asyncio
import contextlib
import signal

import click

from voicemesh.cli.common import cli, die_on_voicemesh_error, profile_option, progress
from wire.errors import VoicemeshError


@cli.group()
def llm() -> None:
    """The LLM server (vLLM)."""


@llm.command("serve")
@profile_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8100, show_default=True, type=int)
def serve(profile: str | None, host: str, port: int) -> None:
    """Run vLLM in the foreground until interrupted."""
    from region.llm_server import VllmServer
    from voicemesh.profiles import load_profile

    server = VllmServer(load_profile(profile).llm, host=host, port=port, report=progress)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await server.start()
            progress(f"LLM serving at {server.url} (Ctrl-C to stop)")
            waiter = asyncio.create_task(server.wait())
            stopper = asyncio.create_task(stop.wait())
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            for t in (waiter, stopper):
                t.cancel()
        finally:
            await server.stop()

    try:
        asyncio.run(run())
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    with contextlib.suppress(Exception):
        progress("LLM stopped")
