"""voicemesh.processes on real small processes: start, wait for health, stop, leave nothing behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from voicemesh.processes import (
    ProcessStartError,
    cpu_seconds,
    free_port,
    is_alive,
    kill_tree,
    listening_pid,
    rss_mib,
    spawn,
    stop,
    stop_async,
    wait_for_sync,
    wait_healthy,
    wait_healthy_sync,
)

# A parent that starts a child in its own group-less way and ignores SIGTERM: stop() must still
# end both (the grace period runs out, then SIGKILL).
_STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
time.sleep(600)
"""


def _http_server(port: int, log: Path) -> subprocess.Popen[bytes]:
    return spawn(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        log_path=log,
        cwd=log.parent,
    )


def _port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now (SO_REUSEADDR, as servers do: TIME_WAIT is fine)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_free_port_is_bindable() -> None:
    assert _port_free(free_port())


async def test_start_wait_stop_leaves_no_process_and_no_port(tmp_path: Path) -> None:
    port = free_port()
    proc = _http_server(port, tmp_path / "http.log")
    took = await wait_healthy(
        f"http://127.0.0.1:{port}/", timeout_s=60, process=proc, log_path=tmp_path / "http.log"
    )
    assert took >= 0
    assert listening_pid(port) == proc.pid
    assert is_alive(proc.pid, "http.server")
    assert rss_mib(proc.pid) > 1 and cpu_seconds(proc.pid) >= 0

    assert await stop_async(proc, grace_s=30)
    assert proc.returncode is not None
    assert _gone(proc.pid) and not is_alive(proc.pid)
    assert listening_pid(port) is None and _port_free(port)
    assert stop(proc) is False  # stopping twice is harmless


def test_sync_wait_and_ready_predicate(tmp_path: Path) -> None:
    port = free_port()
    proc = _http_server(port, tmp_path / "http.log")
    try:
        wait_healthy_sync(
            f"http://127.0.0.1:{port}/",
            timeout_s=60,
            process=proc,
            ready=lambda r: "Directory listing" in r.text,
        )
    finally:
        assert stop(proc)
    assert _gone(proc.pid)


def test_process_that_dies_at_once_reports_its_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "dies.log"
    proc = spawn(
        [sys.executable, "-c", "import sys; print('boom: no model here'); sys.exit(3)"], log_path=log
    )
    with pytest.raises(ProcessStartError) as caught:
        wait_healthy_sync(
            f"http://127.0.0.1:{free_port()}/health",
            timeout_s=600,  # never reached: the exit is noticed at the next probe
            process=proc,
            log_path=log,
            what="the test server",
            hint="Run `voicemesh models fetch`.",
        )
    message = str(caught.value)
    assert caught.value.code == "process_start_failed"
    assert "the test server exited with code 3" in message
    assert "boom: no model here" in message
    assert message.endswith("Run `voicemesh models fetch`.")


async def test_timeout_names_the_url_and_last_probe(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/health"  # nothing listens there
    with pytest.raises(ProcessStartError) as caught:
        await wait_healthy(url, timeout_s=0.5, what="nothing", interval_s=0.1)
    assert "nothing was not ready within" in str(caught.value)
    assert f"last probe: GET {url}: ConnectError" in str(caught.value)


def test_wait_for_retries_any_probe_until_it_passes() -> None:
    calls: list[int] = []

    def probe() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionRefusedError("not yet")

    wait_for_sync(probe, timeout_s=600, interval_s=0.01, what="the probe")
    assert len(calls) == 3

    def never() -> None:
        raise ConnectionRefusedError("never")

    with pytest.raises(ProcessStartError, match=r"the probe was not ready .*ConnectionRefusedError: never"):
        wait_for_sync(never, timeout_s=0.2, interval_s=0.05, what="the probe")


def test_stop_ends_a_stopped_process(tmp_path: Path) -> None:
    port = free_port()
    proc = _http_server(port, tmp_path / "http.log")
    wait_healthy_sync(f"http://127.0.0.1:{port}/", timeout_s=60, process=proc)
    proc.send_signal(signal.SIGSTOP)
    assert stop(proc, grace_s=30)
    assert _gone(proc.pid) and _port_free(port)
    # It exited on SIGTERM (after SIGCONT), not by SIGKILL at the end of the grace period.
    assert proc.returncode == -signal.SIGTERM


def _children_of(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The children of ``proc`` once it has started them (polls; no deadline but the test's)."""
    parent = psutil.Process(proc.pid)
    while not (children := parent.children()):
        time.sleep(0.05)
    return children


def test_stop_kills_a_tree_that_ignores_sigterm(tmp_path: Path) -> None:
    proc = spawn([sys.executable, "-c", _STUBBORN], log_path=tmp_path / "stubborn.log")
    children = _children_of(proc)
    assert stop(proc, grace_s=0.5)
    assert proc.returncode == -signal.SIGKILL
    psutil.wait_procs(children, timeout=30)  # reparented to init, which reaps them
    assert all(_gone(c.pid) for c in children)


def test_stop_ends_a_child_that_left_the_group(tmp_path: Path) -> None:
    script = _STUBBORN.replace("signal.signal(signal.SIGTERM, signal.SIG_IGN)", "").replace(
        '"import time; time.sleep(600)"])', '"import time; time.sleep(600)"], start_new_session=True)'
    )
    proc = spawn([sys.executable, "-c", script], log_path=tmp_path / "escaped.log")
    children = _children_of(proc)
    # The child calls setsid() just after fork: wait until it has really left the group.
    while os.getpgid(children[0].pid) == proc.pid:
        time.sleep(0.05)
    assert stop(proc, grace_s=30)
    assert proc.returncode == -signal.SIGTERM  # the parent went on SIGTERM
    psutil.wait_procs(children, timeout=30)
    assert all(_gone(c.pid) for c in children)


def test_kill_tree_kills_parent_and_children(tmp_path: Path) -> None:
    proc = spawn([sys.executable, "-c", _STUBBORN], log_path=tmp_path / "tree.log")
    try:
        children = _children_of(proc)
        assert set(kill_tree(proc.pid)) == {proc.pid, *(c.pid for c in children)}
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        psutil.wait_procs(children, timeout=30)
        assert all(_gone(c.pid) for c in children)
    finally:
        stop(proc, grace_s=1)
    assert kill_tree(proc.pid) == []
