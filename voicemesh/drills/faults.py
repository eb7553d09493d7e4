"""Faults a drill can inject, and the promise to undo every one of them.

* process signals on a region's process: SIGSTOP/SIGCONT (``hang``/``resume``); the crash fault
  is ``voicemesh.processes.kill_tree`` (SIGKILL the process and its children)
* ``FaultProxy``: a small asyncio TCP proxy on loopback placed in front of a region; it adds
  latency, cuts live connections, or refuses new ones (down). The kernel here has no ``netem`` and
  there is no toxiproxy, so this is how latency and cut-offs are made.
* ``Undo``: a stack of undo actions a drill runs in ``finally`` (SIGCONT, proxies back up, restart).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FaultMark:
    """A fault on the drill's time axis (for the report and the timeline)."""

    at: float
    kind: str
    region: str
    detail: str = ""
    until: float | None = None


def hang(pid: int) -> None:
    """SIGSTOP: the process keeps its sockets open and answers nothing (a hung host)."""
    os.kill(pid, signal.SIGSTOP)


def resume(pid: int) -> None:
    """SIGCONT; a process that is gone already is no error (undo actions must not fail)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


class Undo:
    """Undo actions, run newest first; each one runs even when an earlier one fails."""

    def __init__(self) -> None:
        self._actions: list[tuple[str, Callable[[], Awaitable[None]]]] = []

    def push(self, name: str, action: Callable[[], Awaitable[None]]) -> None:
        self._actions.append((name, action))

    def pop(self, name: str) -> None:
        self._actions = [a for a in self._actions if a[0] != name]

    async def run(self) -> list[str]:
        """Run everything; returns the names of undo actions that failed."""
        failed: list[str] = []
        while self._actions:
            name, action = self._actions.pop()
            try:
                await action()
            except Exception:
                log.exception("undo %s failed", name)
                failed.append(name)
        return failed


class FaultProxy:
    """A loopback TCP proxy in front of ``target_port`` with switchable latency, cuts and downtime."""

    def __init__(self, target_port: int, *, target_host: str = "127.0.0.1", listen_port: int = 0) -> None:
        self.target = (target_host, target_port)
        self.port = listen_port
        self.latency_s = 0.0
        """Added to every chunk, each direction (a round trip pays it twice)."""
        self._server: asyncio.Server | None = None
        self._links: dict[asyncio.Task[None], list[asyncio.StreamWriter]] = {}
        """Each live link's handler task and its two sockets."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_up(self) -> bool:
        return self._server is not None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    async def down(self) -> int:
        """Refuse new connections (connection refused) and cut the live ones."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        return await self.cut()

    async def up(self) -> None:
        if self._server is None:
            await self.start()

    async def cut(self) -> int:
        """Drop every live connection at once; returns how many were cut."""
        links = dict(self._links)
        for writers in links.values():
            for w in writers:
                _abort(w)
        # Aborted sockets end their handlers by themselves; cancelling them instead would make
        # asyncio's server log the cancellation as an error.
        if links:
            _, stuck = await asyncio.wait(links, timeout=2.0)
            for task in stuck:
                task.cancel()
        return len(links)

    async def stop(self) -> None:
        await self.down()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        writers = [writer]
        self._links[task] = writers
        try:
            up_reader, upstream = await self._connect()
            writers.append(upstream)
            await asyncio.gather(self._pipe(reader, upstream), self._pipe(up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._links.pop(task, None)
            for w in writers:
                _abort(w)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(*self.target)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        # Chunks wait in a queue until due, so latency delays data without throttling throughput.
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                if not data:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                dst.write(data)
                await dst.drain()
            with contextlib.suppress(OSError):
                if dst.can_write_eof():
                    dst.write_eof()

        sender = asyncio.create_task(deliver())
        try:
            while data := await src.read(65536):
                queue.put_nowait((time.monotonic() + self.latency_s, data))
            queue.put_nowait((time.monotonic() + self.latency_s, b""))
            await sender
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await sender


class Balancer(FaultProxy):
    """A loopback TCP load balancer in front of several edges: each new connection goes to the next
    edge in turn, and to the one after when an edge refuses (a dead edge is skipped at once). A
    client reconnecting through it lands on another edge, as behind a real load balancer."""

    def __init__(self, target_ports: list[int], *, listen_port: int = 0) -> None:
        super().__init__(target_ports[0], listen_port=listen_port)
        self.targets = [("127.0.0.1", port) for port in target_ports]
        self._next = 0

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        for _ in self.targets:
            target = self.targets[self._next % len(self.targets)]
            self._next += 1
            try:
                return await asyncio.wait_for(asyncio.open_connection(*target), 2.0)
            except (OSError, TimeoutError):
                continue
        raise ConnectionRefusedError("no edge behind the balancer accepts connections")


def _abort(writer: asyncio.StreamWriter) -> None:
    # abort(), not close(): a cut must look like a dropped link to the peer (RST), not a polite FIN.
    transport = writer.transport
    if not transport.is_closing():
        transport.abort()
