"""Checks on the processes Terraform started: is the pid alive, does /health answer, is the port free."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import psutil

# One INFO line per probe would bury the status table.
logging.getLogger("httpx").setLevel(logging.WARNING)


@dataclass(frozen=True)
class ProcessSpec:
    """One entry of the environment's ``processes`` output."""

    address: str
    """The Terraform resource that owns the process (what ``-replace`` takes)."""
    name: str
    pid_file: Path
    log_file: Path
    health_url: str
    match: str

    @classmethod
    def from_output(cls, address: str, value: dict[str, Any]) -> ProcessSpec:
        return cls(
            address=address,
            name=str(value["name"]),
            pid_file=Path(value["pid_file"]),
            log_file=Path(value["log_file"]),
            health_url=str(value["health_url"]),
            match=str(value["match"]),
        )


@dataclass(frozen=True)
class ProcessStatus:
    spec: ProcessSpec
    pid: int | None
    alive: bool
    healthy: bool
    detail: str
    """The health body (or the reason it failed)."""

    @property
    def state(self) -> str:
        if not self.alive:
            return "dead"
        return "ready" if self.healthy else "not answering"


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def is_alive(pid: int | None, match: str = "") -> bool:
    """True when ``pid`` runs (a zombie counts as dead) and its command line contains ``match``."""
    if pid is None:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return match in " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def port_open(url: str) -> bool:
    """Whether anything accepts TCP connections on ``url``'s host and port."""
    parts = urlsplit(url)
    port = parts.port or {"https": 443, "redis": 6379}.get(parts.scheme, 80)
    with contextlib.suppress(OSError), socket.create_connection((parts.hostname or "127.0.0.1", port), 0.5):
        return True
    return False


_SUMMARY_KEYS = ("status", "active", "queue_depth", "load", "error")


def _summary(response: httpx.Response) -> str:
    """The interesting part of a health body: a region's status and load, else the raw text."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and any(k in body for k in _SUMMARY_KEYS):
        return " ".join(f"{k}={body[k]}" for k in _SUMMARY_KEYS if k in body)
    return f"HTTP {response.status_code} {response.text.strip()[:200]}"


HeadersFor = Callable[[ProcessSpec], Mapping[str, str]]
"""Request headers for a process's health check (a region token for regions: without one a region
answers only ready/not-ready)."""


def no_headers(_spec: ProcessSpec) -> Mapping[str, str]:
    return {}


async def _ping_redis(url: str, timeout_s: float) -> tuple[bool, str]:
    """A Redis ``PING`` in its wire protocol (a redis:// process has no HTTP health URL)."""
    parts = urlsplit(url)
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(parts.hostname or "127.0.0.1", parts.port or 6379)
            try:
                writer.write(b"PING\r\n")
                await writer.drain()
                line = (await reader.readline()).decode(errors="replace").strip()
            finally:
                writer.close()
    except (OSError, TimeoutError) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return line == "+PONG", f"PING: {line or '(no answer)'}"


async def check(
    spec: ProcessSpec, client: httpx.AsyncClient, headers_for: HeadersFor = no_headers
) -> ProcessStatus:
    pid = read_pid(spec.pid_file)
    alive = is_alive(pid, spec.match)
    if spec.health_url.startswith("redis://"):
        healthy, detail = await _ping_redis(spec.health_url, float(client.timeout.connect or 3.0))
        return ProcessStatus(spec, pid, alive, healthy and alive, detail)
    try:
        response = await client.get(spec.health_url, headers=dict(headers_for(spec)))
        healthy, detail = response.is_success, _summary(response)
    except httpx.HTTPError as exc:
        healthy, detail = False, f"{type(exc).__name__}: {exc}"
    return ProcessStatus(spec, pid, alive, healthy and alive, detail)


async def check_all(
    specs: list[ProcessSpec], timeout_s: float = 3.0, headers_for: HeadersFor = no_headers
) -> list[ProcessStatus]:
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        return list(await asyncio.gather(*(check(s, client, headers_for) for s in specs)))
