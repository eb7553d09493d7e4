"""Ctrl-C, SIGTERM and SIGHUP as one exception, raised wherever ``voicemesh up`` happens to be.

The first signal stops our children (Terraform, its provisioner shells, pip) and raises
``Interrupted`` in the main thread, so the command can tear down what it started; later signals
only say that the teardown is under way (a second Ctrl-C must not leave it half done).
Children get SIGTERM first (Terraform stops gracefully on it, and so lets its worker thread in
``asyncio.to_thread`` return, which ``asyncio.run`` waits for), then SIGKILL after a grace period.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import psutil

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_CHILD_GRACE_S = 15.0
_TERRAFORM_DELAY_S = 3.0


class Interrupted(BaseException):
    """A signal asked the command to stop (a BaseException: no ``except Exception`` swallows it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _is_terraform(p: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return p.name() == "terraform"
    return False


def _later(delay_s: float, procs: list[psutil.Process], act: Callable[[psutil.Process], None]) -> None:
    def run() -> None:
        for p in procs:
            with contextlib.suppress(psutil.Error):
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    act(p)

    timer = threading.Timer(delay_s, run)
    timer.daemon = True
    timer.start()


def _stop_children() -> None:
    """SIGTERM our children now, Terraform a little later, SIGKILL what is left after the grace.

    Terraform takes a second interrupt as "exit immediately" (its state half written), and a
    Ctrl-C at the terminal already gave it one: it gets ours only if it is still running later.
    """
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    terraform = [p for p in children if _is_terraform(p)]
    for child in children:
        if child not in terraform:
            with contextlib.suppress(psutil.Error):
                child.terminate()
    _later(_TERRAFORM_DELAY_S, terraform, psutil.Process.terminate)
    _later(_CHILD_GRACE_S, children, psutil.Process.kill)


@contextlib.contextmanager
def interruptible(report: Callable[[str], None]) -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM/SIGHUP raise ``Interrupted`` (once)."""
    first: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        if first:
            with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone
                report(f"{signal.Signals(signum).name}: still stopping what was started, please wait")
            return
        first.append(signum)
        _stop_children()
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
