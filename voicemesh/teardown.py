"""Stop everything a local deployment started, whatever state it was left in.

Used by ``voicemesh down``, by ``up`` when it is interrupted or fails, and by ``up`` when it finds
what an earlier, killed ``up`` left. Order: the owner first (so a supervisor heals nothing more
and a foreground ``up`` tears itself down), then every process the ledger and the deployment tag
name, then ``terraform destroy`` (now quick: its processes are gone; it leaves the state empty and
consistent), then a check that no process and no port of the ledger is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable

import psutil

from infra.processes import is_alive
from voicemesh.processes import Ledger, listening, members, stop_all, stop_async
from wire.errors import VoicemeshError

Report = Callable[[str], None]
OWNER_GRACE_S = 120.0
"""A foreground ``up`` asked to stop tears its deployment down before it exits: give it time."""


def _is_us(pid: int) -> bool:
    if pid == os.getpid():
        return True
    with contextlib.suppress(psutil.Error):
        return pid in {p.pid for p in psutil.Process().parents()}
    return False


async def teardown(ledger: Ledger, destroy: Callable[[], Awaitable[None]], report: Report) -> list[str]:
    """Stop all of ``ledger``'s deployment; ``destroy`` empties Terraform's state. Returns what is
    still running or listening (empty: clean, and the ledger is cleared)."""
    owner = ledger.owner
    if owner is not None and not _is_us(owner) and is_alive(owner, "voicemesh"):
        report(f"stopping the deployment's owner first (pid {owner}: `voicemesh up` or `supervise`)")
        await stop_async(owner, grace_s=OWNER_GRACE_S)
        ledger = Ledger.load(ledger.path.parent)  # it may have cleaned up and cleared it
    pids = members(ledger)
    if pids:
        report(f"stopping {len(pids)} process(es) of the deployment: {', '.join(map(str, pids))}")
        await asyncio.to_thread(stop_all, pids)
    problems: list[str] = []
    try:
        await destroy()
    except VoicemeshError as exc:
        problems.append(exc.message)
    left = members(ledger)
    if left:  # started while we swept (a provisioner's last child), or escaped a dying tree
        await asyncio.to_thread(stop_all, left)
        left = members(ledger)
    if left:
        problems.append(f"still running: pid {', '.join(map(str, left))}")
    held = listening(ledger.ports())
    for port, pid in held.items():
        problems.append(f"port {port} still listened on (pid {pid or 'unknown'})")
    if not left and not held:
        ledger.clear()
    return problems
