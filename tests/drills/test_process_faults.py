"""Process faults on real processes: find a region-like listener by port, hang it, crash it; undo."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from voicemesh.drills.faults import Undo, hang, resume
from voicemesh.processes import free_port, kill_tree, listening_pid

# A listener with a child, like a region process with a helper.
_SERVER = """
import socket, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
print(child.pid, flush=True)
time.sleep(60)
"""


def _wait_status(pid: int, wanted: set[str], timeout_s: float = 30.0) -> str:
    """The process's status once it is one of ``wanted`` ("gone" when it no longer exists); signals
    land asynchronously, so the test waits for the state instead of racing the kernel."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            status: str = psutil.Process(pid).status()
        except psutil.NoSuchProcess:
            status = "gone"
        if status in wanted or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def test_find_stop_continue_and_kill_a_listener() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert listening_pid(port) == proc.pid
        assert listening_pid(free_port()) is None

        hang(proc.pid)
        assert _wait_status(proc.pid, {psutil.STATUS_STOPPED}) == psutil.STATUS_STOPPED
        resume(proc.pid)
        assert (
            _wait_status(proc.pid, {psutil.STATUS_SLEEPING, psutil.STATUS_RUNNING}) != psutil.STATUS_STOPPED
        )

        killed = kill_tree(proc.pid)
        assert set(killed) == {proc.pid, child}
        assert proc.wait(30) == -9
        # The orphaned child dies too (a zombie until whoever adopted it reaps it).
        assert _wait_status(child, {"gone", psutil.STATUS_ZOMBIE}) in {"gone", psutil.STATUS_ZOMBIE}
        assert listening_pid(port) is None
        assert kill_tree(proc.pid) == []  # already gone: nothing to do, no error
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_undo_runs_everything_newest_first_even_after_a_failure() -> None:
    done: list[str] = []

    async def ok(name: str) -> None:
        done.append(name)

    async def broken() -> None:
        raise RuntimeError("cannot undo")

    undo = Undo()
    undo.push("first", lambda: ok("first"))
    undo.push("broken", broken)
    undo.push("dropped", lambda: ok("dropped"))
    undo.pop("dropped")  # a fault that undid itself removes its undo
    undo.push("last", lambda: ok("last"))
    assert await undo.run() == ["broken"]
    assert done == ["last", "first"]
    assert await undo.run() == []  # each undo runs once


def test_signals_to_a_missing_process() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    resume(gone.pid)  # SIGCONT in an undo must never fail, even when the process is gone
    with pytest.raises(ProcessLookupError):
        hang(gone.pid)  # but a hang that cannot be injected must say so
