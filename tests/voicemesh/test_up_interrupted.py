"""`voicemesh up` interrupted at each of its steps leaves no process and no port; `down` after a
SIGKILLed `up` stops everything; the next `up` works (and a second one is refused while it runs).

Real `voicemesh up` subprocesses, real Terraform, real regions, Redis and edges. The LLM is the test
run's (``llm_url``): it is not what these tests are about, and it is never started or stopped here.
One region and one edge keep each run short. A signal "from the terminal" (Ctrl-C) goes to the
whole process group, as a shell sends it; `kill` goes to the `up` process alone.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from infra.tooling import Toolchain
from tests.fixtures.infra import VOICEMESH_BIN, free_port_run
from voicemesh import paths
from voicemesh.processes import free_port
from voicemesh.processes.sweep import tagged

_LINE_TIMEOUT_S = 300.0  # one region and one edge start in ~15 s; a loaded machine is slower


@dataclass
class Home:
    """A VOICEMESH_HOME of its own, sharing the user's downloads; its own ports."""

    root: Path
    base_port: int = field(default_factory=lambda: free_port_run(1))
    port: int = field(default_factory=lambda: free_port_run(3))
    """The front door; its one edge on the next port, the front door's /health on the one after."""
    redis_port: int = field(default_factory=free_port)
    llm_port: int = field(default_factory=free_port)

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def ports(self) -> list[int]:
        return [self.base_port, self.port, self.port + 1, self.port + 2, self.redis_port, self.llm_port]

    def env(self) -> dict[str, str]:
        return {**os.environ, "VOICEMESH_HOME": str(self.root), "COLUMNS": "250"}

    def up_args(self, llm_url: str, *extra: str) -> list[str]:
        """``llm_url`` empty: `up` starts a vLLM of its own (on ``llm_port``)."""
        return [
            VOICEMESH_BIN, "up", "--regions", "1", "--edges", "1",
            *(("--llm-url", llm_url) if llm_url else ("--llm-port", str(self.llm_port))),
            "--base-port", str(self.base_port), "--port", str(self.port),
            "--redis-port", str(self.redis_port), *extra,
        ]  # fmt: skip

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [VOICEMESH_BIN, *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def processes(self) -> set[int]:
        """Every live process of this deployment: pid files, ledger owner, and the tag."""
        pids = set(tagged(str(self.state)))
        run_dir = self.state / "infra" / "local" / "run"
        for pid_file in run_dir.glob("*.pid") if run_dir.exists() else ():
            try:
                pids.add(int(pid_file.read_text()))
            except (OSError, ValueError):
                continue
        return {p for p in pids if _alive(p)}

    def assert_nothing_left(self, before: set[int]) -> None:
        deadline = time.monotonic() + 30  # a process stopped by SIGKILL is reaped by init
        while time.monotonic() < deadline and ({p for p in before if _alive(p)} or self.processes()):
            time.sleep(0.2)
        assert not {p for p in before if _alive(p)}, f"still alive: {before}"
        assert not self.processes()
        assert not [p for p in self.ports if _listening(p)], "a port is still listened on"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for_children(home: Home, *, at_least: int) -> None:
    """Until ``at_least`` processes of the deployment run vLLM (its API server, its engine core)."""
    deadline = time.monotonic() + _LINE_TIMEOUT_S
    while time.monotonic() < deadline:
        vllm = []
        for pid in home.processes():
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if "vllm" in " ".join(p.cmdline()).lower() or "vllm" in p.name().lower():
                    vllm.append(pid)
        if len(vllm) >= at_least:
            return
        time.sleep(0.2)
    pytest.fail(f"vLLM never started {at_least} processes")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Up:
    """A running `voicemesh up` whose output is read line by line."""

    def __init__(self, home: Home, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            args, env=home.env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
            start_new_session=True,  # its own process group, as a shell job: a "Ctrl-C" can reach it all
        )  # fmt: skip
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = _LINE_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if text in line:
                return
        pytest.fail(f"`up` never said {text!r}; it said:\n{self.output}")

    def signal(self, sig: signal.Signals, *, group: bool) -> None:
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)

    def finish(self, timeout: float = 180) -> int:
        code = self.proc.wait(timeout=timeout)
        self.wait_for_end()
        return code

    def wait_for_end(self) -> None:
        while (line := self._queue.get(timeout=30)) is not None:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def home(terraform: Toolchain, models: dict[str, Path], tmp_path: Path) -> Iterator[Home]:
    root = tmp_path / "home"
    root.mkdir()
    for shared in ("models", "packages", "runtimes", "terraform"):
        if (paths.home() / shared).exists():
            (root / shared).symlink_to(paths.home() / shared)
    h = Home(root)
    try:
        yield h
    finally:  # whatever a failed test left
        h.run("down", timeout=300)


def _next_up_works(home: Home, llm_url: str, *extra: str, refuses_a_second: bool = False) -> None:
    up = home.run(*home.up_args(llm_url, "--detach", *extra)[1:])
    assert up.returncode == 0, up.stderr
    assert "voicemesh is up" in up.stderr and "already answers" not in up.stderr
    assert (
        _listening(home.port)
        and _listening(home.port + 1)
        and _listening(home.base_port)
        and _listening(home.redis_port)
    )
    running = home.processes()
    if refuses_a_second:
        second = home.run(*home.up_args(llm_url, "--detach", "--skip-models")[1:])
        assert second.returncode == 1
        assert "already running" in second.stderr and "voicemesh down" in second.stderr
        assert home.processes() == running  # the first one is untouched
    down = home.run("down")
    assert down.returncode == 0, down.stderr
    home.assert_nothing_left(running)


# Where `up` is when the signal comes: the line it printed just before.
POINTS = [
    pytest.param("[1/3] models", signal.SIGINT, True, id="models-check-ctrl-c"),
    # `up` starting its own vLLM, interrupted while it warms (vLLM and its engine process must go).
    pytest.param("llm: started", signal.SIGINT, True, id="vllm-warming-ctrl-c"),
    pytest.param("region-eu-west: started", signal.SIGTERM, False, id="terraform-apply-sigterm"),
    pytest.param("edge-paris: started", signal.SIGHUP, False, id="edge-wait-sighup"),
    pytest.param("frontdoor: started", signal.SIGINT, False, id="frontdoor-wait-ctrl-c"),
]


@pytest.mark.parametrize(("after", "sig", "group"), POINTS)
def test_an_interrupted_up_leaves_nothing_and_the_next_up_works(
    home: Home, llm_url: str, after: str, sig: signal.Signals, group: bool
) -> None:
    if "models" in after:
        # Models are assembled from the user's downloaded packages into this home: seconds of
        # work, so the signal lands inside the check (and the next `up` must finish it).
        (home.root / "models").unlink()
        extra: tuple[str, ...] = ()
    else:
        extra = ("--skip-models",)
    own_llm = after.startswith("llm:")
    up = Up(home, home.up_args("" if own_llm else llm_url, *extra))
    try:
        up.wait_for(after)
        if own_llm:  # the engine core is vLLM's own child: interrupt once it exists
            _wait_for_children(home, at_least=2)
        started = home.processes()
        up.signal(sig, group=group)
        code = up.finish()
    finally:
        up.kill()
    assert code == 128 + sig, up.output
    assert f"interrupted ({sig.name})" in up.output
    assert "Aborted!" not in up.output and "Traceback" not in up.output
    assert "no process and no listening port left" in up.output
    if "models" in after:
        assert "[2/3]" not in up.output  # it really was stopped in the models check
    else:
        assert started, "the point is to interrupt while processes start"
    home.assert_nothing_left(started)
    assert not (home.state / "ledger.json").exists()  # all it named is stopped
    _next_up_works(home, llm_url, *extra)


def test_down_after_a_killed_up_stops_everything(home: Home, llm_url: str) -> None:
    up = Up(home, home.up_args(llm_url, "--skip-models"))
    try:
        up.wait_for("region-eu-west: ready")
        started = home.processes()
        # SIGKILL to `up` alone: it cannot clean up, and Terraform (its child) goes on starting the edge.
        up.proc.send_signal(signal.SIGKILL)
        up.proc.wait(timeout=30)
    finally:
        up.kill()
    assert started and any(_alive(p) for p in started)
    down = home.run("down")
    assert down.returncode == 0, down.stderr
    assert "stopping" in down.stderr
    home.assert_nothing_left(started)
    _next_up_works(home, llm_url, "--skip-models", refuses_a_second=True)
