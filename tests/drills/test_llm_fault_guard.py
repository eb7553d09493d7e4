"""``llm-crash`` kills only an LLM the local deployment runs (under ``voicemesh llm serve``, which
Terraform restarts): an LLM of the user's own would be killed with nothing to bring it back.

Real processes: a child of a process whose command line is ``... llm serve`` (what Terraform's
``llm-local`` runs) and one of pytest itself.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

from voicemesh.drills.llm_faults import _supervisor


@contextmanager
def _sleeper(*parent_args: str) -> Iterator[int]:
    """The pid of a sleeping grandchild under a parent started with ``parent_args`` appended."""
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])"
    parent = subprocess.Popen([sys.executable, "-c", code, *parent_args])
    try:
        for _ in range(200):
            children = psutil.Process(parent.pid).children()
            if children:
                yield children[0].pid
                return
            time.sleep(0.05)
        raise AssertionError("the sleeper never started")
    finally:
        for child in psutil.Process(parent.pid).children(recursive=True):
            child.kill()
        parent.kill()
        parent.wait()


def test_an_llm_under_llm_serve_has_its_supervisor_and_any_other_has_none() -> None:
    with _sleeper("llm", "serve") as pid:
        supervisor = _supervisor(pid)
        assert supervisor is not None and "llm serve" in " ".join(supervisor.cmdline())
    with _sleeper() as pid:
        assert _supervisor(pid) is None  # crash_llm refuses it before any kill
