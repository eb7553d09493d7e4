"""Facts about processes, from psutil: who listens on a port, memory, CPU time, liveness."""

from __future__ import annotations

import psutil

from infra.processes import is_alive, read_pid

__all__ = ["cpu_seconds", "is_alive", "listening_pid", "read_pid", "rss_mib"]


def listening_pid(port: int, host: str = "127.0.0.1") -> int | None:
    """The process listening on ``host:port`` (how a region's process is found from its URL)."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            if conn.laddr.ip in (host, "0.0.0.0", "::"):
                return conn.pid
    return None


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` in MiB."""
    return float(psutil.Process(pid).memory_info().rss) / 2**20


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time ``pid`` has used so far."""
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)
