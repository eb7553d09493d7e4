"""The one process helper: start a child, wait until it answers, stop it and all it started.

Every tool that runs voicemesh pieces as processes (``voicemesh up``, ``region serve``'s vLLM, the
benches, the drills, the test fixtures) uses these instead of its own loops:

* ``lifecycle``: ``free_port``; ``spawn`` (own session, output to a log, stdin closed; with
  ``die_with_parent``, killed by the kernel when its parent dies); ``stop`` (SIGCONT, SIGTERM to
  the group, a grace period, then SIGKILL for whatever is left of the tree); ``kill_tree`` (a
  crash fault); ``log_tail``.
* ``health``: ``wait_healthy`` / ``wait_healthy_sync`` poll a health URL with tenacity until it
  answers 2xx, failing at once if the process exits, or at the deadline, with ProcessStartError
  carrying the log's last lines and what to do next; ``wait_for`` / ``wait_for_sync`` do the same
  for any probe (a Redis PING).
* ``ledger``: ``Ledger`` / ``Entry``, what a deployment starts, saved before it starts it, and
  ``TAG_ENV``, the variable every process of a local deployment inherits.
* ``sweep``: ``members`` (every live process of a deployment, by ledger and tag), ``stop_all``,
  ``listening`` (which of its ports are still held).
* ``facts`` (psutil): ``listening_pid``, ``rss_mib``, ``cpu_seconds``, and ``is_alive`` /
  ``read_pid`` from ``infra.processes`` (the infra tier needs them itself and must not import
  voicemesh).

Import from the package (``from voicemesh.processes import spawn, wait_healthy, stop``).
"""

from voicemesh.processes.facts import cpu_seconds, is_alive, listening_pid, read_pid, rss_mib
from voicemesh.processes.health import (
    ProcessStartError,
    Ready,
    WaitOptions,
    wait_for,
    wait_for_sync,
    wait_healthy,
    wait_healthy_sync,
)
from voicemesh.processes.ledger import TAG_ENV, Entry, Ledger
from voicemesh.processes.lifecycle import (
    Process,
    free_port,
    kill_tree,
    log_tail,
    spawn,
    stop,
    stop_async,
)
from voicemesh.processes.sweep import listening, members, stop_all

__all__ = [
    "TAG_ENV",
    "Entry",
    "Ledger",
    "Process",
    "ProcessStartError",
    "Ready",
    "WaitOptions",
    "cpu_seconds",
    "free_port",
    "is_alive",
    "kill_tree",
    "listening",
    "listening_pid",
    "log_tail",
    "members",
    "read_pid",
    "rss_mib",
    "spawn",
    "stop",
    "stop_all",
    "stop_async",
    "wait_for",
    "wait_for_sync",
    "wait_healthy",
    "wait_healthy_sync",
]
