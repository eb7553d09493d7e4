"""A region node on this machine, with its own vLLM when no LLM URL is given.

The region tier only talks to an LLM over HTTP (``region.server.serve_region`` takes its URL);
composing it with a vLLM process is the command line's job. vLLM is spawned first and the region
starts beside it (its STT and TTS warm up while vLLM loads; the node waits for the LLM), so a
region with its own vLLM starts as fast as before. Used by ``voicemesh region serve`` and
``voicemesh bench region``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from region.node import RegionNode
from region.server import serve_region
from region.settings import RegionSettings
from voicemesh.llm_server import LlmStartError, VllmServer
from voicemesh.processes import free_port

Report = Callable[[str], None]


async def serve_local_region(
    settings: RegionSettings,
    *,
    stop: asyncio.Event,
    report: Report,
    llm_port: int = 0,
    llm_log: Path | None = None,
    on_ready: Callable[[RegionNode], None] | None = None,
) -> None:
    """Serve the region until ``stop`` is set; raise if a model fails to load or vLLM dies.

    With ``settings.llm.url`` set this is ``serve_region``. Without it, vLLM is started on
    ``llm_port`` (default: a free port) and stopped after the region.
    """
    if settings.llm.url is not None:
        await serve_region(settings, stop=stop, report=report, on_ready=on_ready)
        return
    vllm = VllmServer(settings.llm, port=llm_port or free_port(), log_path=llm_log, report=report)
    settings = replace(settings, llm=replace(settings.llm, url=vllm.url))
    region_stop = asyncio.Event()
    llm = asyncio.create_task(_supervise(vllm), name="vllm")
    region = asyncio.create_task(
        serve_region(settings, stop=region_stop, report=report, on_ready=on_ready), name="region"
    )
    stopper = asyncio.create_task(stop.wait(), name="stop")
    try:
        await asyncio.wait({llm, region, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        region_stop.set()
        llm.cancel()
        stopper.cancel()
        await asyncio.wait({llm, region, stopper})
        await vllm.stop()
    problem = None if llm.cancelled() else llm.exception()
    if problem is not None:
        raise problem
    region.result()  # the region's own failure, if any


async def _supervise(vllm: VllmServer) -> None:
    """Start vLLM, then raise when it exits: the region cannot answer without it."""
    await vllm.start()
    code = await vllm.wait()
    raise LlmStartError(f"the region's vLLM exited with code {code}; see {vllm.log_path}")
