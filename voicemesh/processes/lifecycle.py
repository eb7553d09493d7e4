"""Start a child process, stop it with everything it started, and the small things around that."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import psutil

Process = subprocess.Popen[bytes] | int
"""A child we spawned, or any pid."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child get SIGTERM when the thread that spawned it dies.

    Its own session protects a child from the terminal's Ctrl-C, but also from its parent's death:
    a supervisor killed with SIGKILL would leave vLLM behind. SIGTERM, not SIGKILL: vLLM's API
    server then stops its engine processes, which a SIGKILL would orphan. libc is loaded here,
    before the fork: the child may only call into it.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: nobody would send the signal
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def spawn(
    cmd: Sequence[str],
    *,
    log_path: Path | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    die_with_parent: bool = False,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session, stdout and stderr appended to ``log_path``.

    ``log_path=None`` leaves the output on our terminal (a foreground child the user watches).
    ``env`` replaces the environment when given (pass ``{**os.environ, ...}`` to extend it).
    ``die_with_parent``: the kernel SIGTERMs the child when the spawning *thread* ends (Linux
    PR_SET_PDEATHSIG), so call it from the main thread or one that lives as long as the child.
    """
    preexec = _die_with_parent() if die_with_parent else None
    if log_path is None:
        return subprocess.Popen(
            list(cmd), env=env, cwd=cwd, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=preexec
        )
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as sink:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            list(cmd),
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stop() ends the whole group: vLLM's workers, shells' children
            preexec_fn=preexec,
        )


def log_tail(log_path: Path | None, lines: int = 20) -> str:
    """The last ``lines`` lines of a log (empty when there is none)."""
    if log_path is None:
        return ""
    try:
        with log_path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 256 * lines))  # lines are rarely longer than this
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _own_group(pid: int) -> bool:
    """Whether ``pid`` leads its own process group (and so can be signalled as a group safely)."""
    try:
        return os.getpgid(pid) == pid and pid != os.getpgrp()
    except ProcessLookupError:
        return False


def _in_group(p: psutil.Process, pgid: int) -> bool:
    try:
        return os.getpgid(p.pid) == pgid
    except ProcessLookupError:
        return True  # gone: nothing to send it


def _signal(pid: int, procs: Sequence[psutil.Process], sig: signal.Signals, group: bool) -> None:
    """``sig`` to the group led by ``pid`` (if ``group``) and to each of ``procs`` outside it.

    Once each: a second SIGTERM makes some servers (uvicorn) skip their graceful shutdown.
    """
    if group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
    for p in procs:
        if group and _in_group(p, pid):
            continue
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            p.send_signal(sig)


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stop(target: Process, *, grace_s: float = 10.0) -> bool:
    """End a process and everything it started: SIGTERM, ``grace_s`` to exit, then SIGKILL.

    SIGCONT goes first (a stopped process cannot act on SIGTERM). A group leader (anything
    ``spawn`` started) is signalled as a whole group; children found by psutil are signalled too,
    so a child that left the group still goes. A Popen is reaped. True if it was running.
    """
    pid = target if isinstance(target, int) else target.pid
    try:
        root = psutil.Process(pid)
        family = [root, *root.children(recursive=True)]  # now: orphans are reparented once it exits
    except psutil.NoSuchProcess:
        family = []
    was_running = bool(family) and _running(family[0])
    popen = None if isinstance(target, int) else target
    if was_running:
        group = _own_group(pid)
        _signal(pid, family, signal.SIGCONT, group)
        _signal(pid, family, signal.SIGTERM, group)
        deadline = time.monotonic() + grace_s
        # Our own child is waited for through Popen (psutil would reap it and lose its exit code).
        others = family[1:] if popen is not None else family
        if popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=grace_s)
        _, alive = psutil.wait_procs(others, timeout=max(0.0, deadline - time.monotonic()))
        leftover = [p for p in alive if _running(p)]
        if popen is not None and popen.poll() is None:
            leftover.append(family[0])
        if leftover or group:  # the group may hold members psutil did not list as children
            _signal(pid, leftover, signal.SIGKILL, group)
            if popen is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    popen.wait(timeout=5.0)
            psutil.wait_procs([p for p in leftover if p is not family[0] or popen is None], timeout=5.0)
    if popen is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            popen.wait(timeout=5.0)
    return was_running


async def stop_async(target: Process, *, grace_s: float = 10.0) -> bool:
    """``stop`` without blocking the event loop."""
    return await asyncio.to_thread(stop, target, grace_s=grace_s)


def kill_tree(pid: int) -> list[int]:
    """SIGKILL a process and its children at once (a host dying takes its helpers with it)."""
    try:
        proc = psutil.Process(pid)
        procs = [*proc.children(recursive=True), proc]
    except psutil.NoSuchProcess:
        return []
    _signal(pid, procs, signal.SIGKILL, group=False)
    return [p.pid for p in procs]
