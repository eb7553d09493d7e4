"""``voicemesh llm serve``: a vLLM server that several local regions can share."""

from __future__ import annotations

import asyncio

import click

from voicemesh.cli.common import cli, profile_option, progress, run_until_signal


@cli.group()
def llm() -> None:
    """The LLM server (vLLM)."""


@llm.command("serve")
@profile_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8100, show_default=True, type=int)
def serve(profile: str | None, host: str, port: int) -> None:
    """Run vLLM in the foreground until interrupted."""
    from voicemesh.llm_server import VllmServer
    from voicemesh.profiles import load_profile

    server = VllmServer(load_profile(profile).llm, host=host, port=port, report=progress)

    async def main(stop: asyncio.Event) -> None:
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
        progress("LLM stopped")

    run_until_signal(main)
