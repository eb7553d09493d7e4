"""The LLM drills' fault: the LLM serving a region killed mid-answer, then restarted.

The LLM is its own process (vLLM behind ``voicemesh llm serve``, or a region's own vLLM): its death
is a region fault. Locally one vLLM may serve every region, so its death takes the model from all of
them at once and the edge's own voice answers until it is back; in the cloud each region has its
own. The fault finds the LLM from the serving region's ``/health`` (``llm_url``), SIGKILLs the
process listening there with its children, waits for the process supervising it to notice, and has
Terraform start it again (``Deployment.restore``: a dead process is replaced). It ends when every
region that used that LLM says ready again (``region.llm_watch`` warms it first): the recovery.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import httpx
import psutil

from voicemesh.drills.deployment import DeploymentError, RegionInfo
from voicemesh.drills.drill_context import DrillContext
from voicemesh.processes import kill_tree, listening_pid

SUPERVISOR_EXIT_S = 30.0
"""How long ``voicemesh llm serve`` may take to exit once its vLLM died (it stops at once)."""
RECOVERY_S = 420.0
"""How long the regions may take to be ready again after the restart (vLLM on CPU: 40-120 s)."""


async def llm_of(ctx: DrillContext, region: RegionInfo) -> tuple[str, list[RegionInfo]]:
    """The LLM URL ``region`` uses and every region using the same one (itself included)."""
    health = await ctx.deployment.region_health(region, timeout_s=5.0)
    url = str((health or {}).get("llm_url") or "")
    if not url:
        raise DeploymentError(f"region {region.id} did not say which LLM it uses (its /health: {health})")
    healths = await asyncio.gather(*(ctx.deployment.region_health(r, timeout_s=5.0) for r in ctx.regions))
    sharing = [r for r, h in zip(ctx.regions, healths, strict=True) if (h or {}).get("llm_url") == url]
    return url, sharing or [region]


def _supervisor(pid: int) -> psutil.Process | None:
    """The ``voicemesh llm serve`` process that runs vLLM ``pid`` (None: something else runs it)."""
    try:
        parent = psutil.Process(pid).parent()
        if parent is not None and "llm serve" in " ".join(parent.cmdline()):
            return parent
    except psutil.Error:
        pass
    return None


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def _until_gone(proc: psutil.Process | None, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while proc is not None and _running(proc):
        if time.monotonic() > deadline:
            raise DeploymentError(
                f"`llm serve` (pid {proc.pid}) still runs {timeout_s:.0f} s after its vLLM died"
            )
        await asyncio.sleep(0.2)


async def _until_ready(ctx: DrillContext, regions: list[RegionInfo], timeout_s: float) -> float:
    """Seconds until every one of ``regions`` answers ``/health`` ready (its LLM back and warm)."""
    t0 = time.monotonic()
    while True:
        healths = await asyncio.gather(*(ctx.deployment.region_health(r) for r in regions))
        if all(h is not None for h in healths):
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout_s:
            raise DeploymentError(
                f"regions {[r.id for r in regions]} not ready {timeout_s:.0f} s after the restart"
            )
        await asyncio.sleep(0.5)


async def not_ready_reason(ctx: DrillContext, region: RegionInfo, timeout_s: float = 15.0) -> str:
    """What ``region``'s ``/health`` says once it is not ready (its status and error), or why not."""
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            try:
                resp = await client.get(
                    region.url.rstrip("/") + "/health", headers=ctx.deployment.region_auth.headers()
                )
                if resp.status_code != 200:
                    body = resp.json()
                    return f"{resp.status_code} {body.get('status')}: {body.get('error', '')}"
            except (httpx.HTTPError, ValueError) as exc:
                return f"no answer: {exc!r}"
            await asyncio.sleep(0.2)
    return f"still ready {timeout_s:.0f} s after its LLM died"


async def crash_llm(ctx: DrillContext) -> None:
    """SIGKILL the LLM of the region serving the moment's turn while it writes an answer; restart
    it; wait for the regions."""
    rec = await ctx.moment()
    url, sharing = await llm_of(ctx, await ctx.busiest(rec))
    port = urlsplit(url).port or 80
    pid = listening_pid(port)
    if pid is None:
        raise DeploymentError(f"no process listens on the LLM's port {port} ({url})")
    supervisor = _supervisor(pid)
    if supervisor is None:  # refused before any harm: nothing of the deployment would restart it
        raise DeploymentError(
            f"the LLM at {url} (pid {pid}) is not run by `voicemesh llm serve` under the local"
            " deployment (an LLM of your own, `voicemesh up --llm-url`?): llm-crash would kill it and"
            " nothing would restart it. Drill a deployment whose LLM Terraform runs: `voicemesh up`"
            " without --llm-url"
        )
    # By the time an answer's first words are heard, a busy machine's LLM may have written all of
    # it: the kill waits for the LLM to be writing one (any caller's), so it lands mid-answer.
    wait_s = ctx.params.retarget_wait_s * ctx.params.retargets
    found = await ctx.writing(sharing, wait_s)
    if found is None:
        region, writing = sharing[0], f"with no answer being written for {wait_s:.0f} s"
        ctx.notes.append(f"the LLM wrote no answer for {wait_s:.0f} s after the moment: killed idle")
    else:
        region, writing = found[0], f"while it wrote for {found[1]} turn(s) of {found[0].id}"
    t0 = time.monotonic()
    killed = kill_tree(pid)
    shared = ", ".join(r.id for r in sharing)
    i = ctx.mark(
        "SIGKILL LLM",
        region.id,
        f"vLLM {url} pids {killed} (the LLM of {shared}) after caller {rec.caller} turn {rec.turn} "
        f"{ctx.params.at_moment}, {writing}",
    )
    ctx.undo.push("restore", lambda: ctx.deployment.restore(ctx.report))
    for r in sharing:
        ctx.notes.append(f"{r.id} /health after the SIGKILL: {await not_ready_reason(ctx, r)}")
    await asyncio.sleep(ctx.params.hold_s)
    await _until_gone(supervisor, SUPERVISOR_EXIT_S)  # (or Terraform sees it alive and keeps it)
    ctx.undo.pop("restore")
    await ctx.deployment.restore(ctx.report, timeout_s=RECOVERY_S)
    restarted = time.monotonic() - t0
    ready = await _until_ready(ctx, sharing, RECOVERY_S)
    ctx.end(i)
    ctx.notes.append(
        f"recovery: the LLM at {url} answered again {restarted:.1f} s after the SIGKILL (restarted by"
        f" Terraform) and {shared} said ready (LLM warm) {ready:.1f} s after that"
    )
