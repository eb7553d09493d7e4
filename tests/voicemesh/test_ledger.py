"""The ledger and the sweep on real small processes: what `voicemesh down` finds without Terraform.

Each test starts plain Python processes the way a deployment does (own session, tagged
environment, pid files) and checks that they are found, and only they, and stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from voicemesh.processes import TAG_ENV, Entry, Ledger, free_port, members, spawn, stop, stop_all
from voicemesh.processes.sweep import listening

_SLEEP = [sys.executable, "-c", "import time; time.sleep(600)"]


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_the_ledger_is_saved_before_and_read_back_after(tmp_path: Path) -> None:
    ledger = Ledger.load(tmp_path)
    assert ledger.is_empty() and ledger.tag == str(tmp_path)
    ledger.owner = 123
    ledger.record(Entry(name="terraform:local", pid_dir=str(tmp_path / "run"), ports=[9001, 8080]))
    ledger.record(Entry(name="supervisor", match="supervise"))
    ledger.record(Entry(name="supervisor", pid=456, match="supervise"))  # replaced by name, not added
    again = Ledger.load(tmp_path)
    assert again.owner == 123 and [e.name for e in again.entries] == ["terraform:local", "supervisor"]
    assert again.entries[1].pid == 456 and again.ports() == [8080, 9001]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "region.pid").write_text("789\n")
    (tmp_path / "run" / "half.pid").write_text("")  # cut short: skipped, not an error
    assert again.entries[0].pids() == [789]
    again.clear()
    assert not (tmp_path / "ledger.json").exists() and not (tmp_path / "run" / "region.pid").exists()
    assert Ledger.load(tmp_path).is_empty()


def test_members_are_found_by_tag_and_by_pid_file_but_never_a_stranger(tmp_path: Path) -> None:
    ledger = Ledger.load(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    tagged = spawn(_SLEEP, log_path=tmp_path / "a.log", env={**os.environ, TAG_ENV: ledger.tag})
    other_tag = spawn(_SLEEP, log_path=tmp_path / "b.log", env={**os.environ, TAG_ENV: "/elsewhere"})
    stranger = spawn(_SLEEP, log_path=tmp_path / "c.log")  # in a pid file, but not ours
    (run / "stranger.pid").write_text(str(stranger.pid))
    ledger.record(Entry(name="env", pid_dir=str(run)))
    try:
        found = members(ledger)
        assert tagged.pid in found
        assert other_tag.pid not in found and stranger.pid not in found  # a reused pid is left alone
        assert stop_all(found) == found
        assert _gone(tagged.pid) and other_tag.poll() is None and stranger.poll() is None
        assert members(ledger) == []
    finally:
        for p in (tagged, other_tag, stranger):
            stop(p)


def test_a_pid_file_process_holding_a_recorded_port_is_ours(tmp_path: Path) -> None:
    # redis-server's process title overwrites its environment: the port it holds says it is ours.
    port = free_port()
    server = spawn(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], log_path=tmp_path / "s.log"
    )
    ledger = Ledger.load(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "redis.pid").write_text(str(server.pid))
    ledger.record(Entry(name="env", pid_dir=str(tmp_path / "run"), ports=[port]))
    try:
        deadline = time.monotonic() + 30
        while port not in listening([port]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listening([port]) == {port: server.pid}
        assert members(ledger) == [server.pid]
        stop_all(members(ledger))
        assert _gone(server.pid) and listening([port]) == {}
    finally:
        stop(server)


_PARENT = """
import sys
from voicemesh.processes import spawn
child = spawn([sys.executable, "-c", "import time; time.sleep(600)"], log_path=None, die_with_parent=True)
print(child.pid, flush=True)
import time; time.sleep(600)
"""


def test_a_child_spawned_with_die_with_parent_dies_with_a_sigkilled_parent(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert psutil.Process(child).ppid() == parent.pid
        assert os.getpgid(child) == child  # its own session: a terminal's Ctrl-C does not reach it
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert _gone(child), "the child outlived its SIGKILLed parent"
    finally:
        parent.kill()
        stop(child)


def test_listening_reports_only_held_ports() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        held = s.getsockname()[1]
        assert listening([held, free_port()]) == {held: os.getpid()}
