"""``voicemesh bench router``: failover gap and routing-decision cost against real local regions."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

import click
import httpx

from voicemesh.cli.common import bench, fail, progress


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRegion:
    """A ``voicemesh region serve`` child process the bench may kill and bring back on its port."""

    def __init__(self, region_id: str, llm_url: str, log_dir: Path) -> None:
        self.id = region_id
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._llm_url = llm_url
        self._log = log_dir / f"{region_id}.log"
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    async def start(self) -> None:
        cmd = [
            sys.executable, "-m", "voicemesh.cli.main", "region", "serve", "--id", self.id,
            "--port", str(self.port), "--llm-url", self._llm_url,
        ]  # fmt: skip
        with self._log.open("ab") as sink:
            self._proc = await asyncio.create_subprocess_exec(
                *cmd, stdout=sink, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL
            )
        deadline = time.monotonic() + 120
        async with httpx.AsyncClient(timeout=1.0) as client:
            while time.monotonic() < deadline:
                if self._proc.returncode is not None:
                    raise RuntimeError(
                        f"region {self.id} exited with {self._proc.returncode}: see {self._log}"
                    )
                try:
                    if (await client.get(f"{self.url}/health")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.3)
        raise RuntimeError(f"region {self.id} not ready within 120 s: see {self._log}")

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def stop(self) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        os.kill(proc.pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), timeout=15)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@bench.command("router")
@click.option(
    "--llm-url",
    default=lambda: os.environ.get("VOICEMESH_LLM_URL", ""),
    help="OpenAI-compatible vLLM the regions share (…/v1; default $VOICEMESH_LLM_URL).",
)
@click.option("--trials", default=5, show_default=True, type=int, help="Turns per scenario.")
@click.option(
    "--prompt",
    default="Describe Paris in three short sentences.",
    show_default=True,
    help="Each turn's text.",
)
@click.option("--max-tokens", default=60, show_default=True, type=int)
def bench_router(llm_url: str, trials: int, prompt: str, max_tokens: int) -> None:
    """Failover gap (crash, hang) next to normal time to first audio, and routing-decision cost."""
    from router.bench import run_bench, summarize

    if not llm_url:
        fail("no LLM: pass --llm-url http://127.0.0.1:8100/v1 (start one with `voicemesh llm serve`)")
    log_dir = Path(tempfile.mkdtemp(prefix="voicemesh-bench-router-"))
    regions = [LocalRegion(f"bench-{name}", llm_url, log_dir) for name in ("a", "b")]

    async def main() -> str:
        try:
            progress(f"starting {len(regions)} local regions (logs in {log_dir})")
            await asyncio.gather(*(r.start() for r in regions))
            result = await run_bench(
                regions, trials=trials, prompt=prompt, max_tokens=max_tokens, report=progress
            )
            return summarize(result)
        finally:
            await asyncio.gather(*(r.stop() for r in regions))

    try:
        summary = asyncio.run(main())
    except RuntimeError as exc:
        fail(str(exc))
    click.echo(summary)
