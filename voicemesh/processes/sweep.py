"""Find every process of a local deployment and stop them all: what ``voicemesh down`` relies on
when Terraform's state does not know a process (an interrupted apply, a killed ``up``)."""

from __future__ import annotations

import contextlib
import os
import socket
from concurrent.futures import ThreadPoolExecutor

import psutil

from infra.processes import is_alive
from voicemesh.processes.facts import listening_pid
from voicemesh.processes.ledger import TAG_ENV, Ledger
from voicemesh.processes.lifecycle import stop


def _ourselves() -> set[int]:
    """This process and its ancestors: never swept (the cleanup runs in a tagged ``up``)."""
    pids = {os.getpid()}
    with contextlib.suppress(psutil.Error):
        pids.update(p.pid for p in psutil.Process().parents())
    return pids


def tagged(tag: str) -> list[int]:
    """Live processes whose environment says they belong to the deployment ``tag``."""
    skip = _ourselves()
    found = []
    for proc in psutil.process_iter():
        if proc.pid in skip:
            continue
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(TAG_ENV) == tag:
                found.append(proc.pid)
        except psutil.Error:
            continue  # gone, or not ours to read
    return found


def _carries(pid: int, tag: str) -> bool:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).environ().get(TAG_ENV) == tag
    return False


def members(ledger: Ledger) -> list[int]:
    """Live processes of the deployment: every tagged one, and each ledger pid that is still what
    was started (it carries the tag, its command line has the entry's non-empty ``match``, or it
    listens on one of the entry's ports: a pid alone may have been reused by anyone)."""
    skip = _ourselves()
    found = set(tagged(ledger.tag))
    for entry in ledger.entries:
        for pid in entry.pids():
            if pid in skip or pid in found:
                continue
            matches = bool(entry.match) and is_alive(pid, entry.match)
            if matches or _carries(pid, ledger.tag) or _listens_on(pid, entry.ports):
                found.add(pid)
    return sorted(found | _group_mates(found, skip))


def _group_mates(pids: set[int], skip: set[int]) -> set[int]:
    """Every process in the process groups of ``pids`` (not ours): all we start leads its own
    group, and a member whose environment was overwritten by its process title (vLLM's
    ``VLLM::EngineCore``) and whose parent already died is still in its group."""
    own = os.getpgrp()
    groups = set()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            groups.add(os.getpgid(pid))
    groups -= {own, 0, 1}
    mates = set()
    for proc in psutil.process_iter():
        if proc.pid in skip:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(proc.pid) in groups and _running(proc):
                mates.add(proc.pid)
    return mates


def _running(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return proc.status() != psutil.STATUS_ZOMBIE
    return False


def _listens_on(pid: int, ports: list[int]) -> bool:
    """A pid file of ours names it and it holds a port we recorded: ours, though its environment
    no longer says so (redis-server's process title overwrites the memory /proc reads it from)."""
    with contextlib.suppress(psutil.Error):
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and any(
            c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in ports
            for c in proc.net_connections(kind="tcp")
        )
    return False


def stop_all(pids: list[int], *, grace_s: float = 15.0) -> list[int]:
    """Stop each (and all it started) at once: SIGTERM, ``grace_s``, SIGKILL. The ones that ran."""
    if not pids:
        return []
    roots = _roots(pids)  # stop() ends a whole tree: a second SIGTERM would cut a graceful shutdown
    ran = _stop_each(roots, grace_s)
    # A root may have died on its own just before (its children then escaped that tree): once more
    # for whatever of ``pids`` still runs.
    rest = [pid for pid in pids if pid not in roots and _running_pid(pid)]
    return sorted(ran + _stop_each(rest, grace_s))


def _stop_each(pids: list[int], grace_s: float) -> list[int]:
    if not pids:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(pids))) as pool:
        ran = list(pool.map(lambda pid: stop(pid, grace_s=grace_s), pids))
    return [pid for pid, was in zip(pids, ran, strict=True) if was]


def _running_pid(pid: int) -> bool:
    with contextlib.suppress(psutil.Error):
        return _running(psutil.Process(pid))
    return False


def _roots(pids: list[int]) -> list[int]:
    """Those of ``pids`` none of whose ancestors is in ``pids``."""
    given = set(pids)
    roots = []
    for pid in pids:
        try:
            ancestors = {p.pid for p in psutil.Process(pid).parents()}
        except psutil.Error:
            continue  # already gone
        if not ancestors & given:
            roots.append(pid)
    return roots


def listening(ports: list[int]) -> dict[int, int | None]:
    """Those of ``ports`` someone listens on (port -> pid, None if the pid is not ours to see)."""
    held: dict[int, int | None] = {}
    for port in ports:
        pid = listening_pid(port)
        if pid is not None or _connectable(port):
            held[port] = pid
    return held


def _connectable(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0
