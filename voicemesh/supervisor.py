"""Self-healing: notice a process of the deployment that died and have Terraform start it again.

The supervisor watches every process in the environment's ``processes`` output (regions, the
shared vLLM, Redis, edges, the front door) by pid file and command line, a few times a second
(psutil: no health request, so a slow region is not mistaken for a dead one). A dead one is
re-provisioned through Terraform (``apply -replace=<address>``, ``Environment.heal``) without a
person; the time from noticing to healthy is logged. It runs inside a foreground
``voicemesh up``, or as ``voicemesh supervise`` (what ``up --detach`` leaves running).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from infra.environment import Environment
from infra.processes import ProcessSpec, is_alive, read_pid
from wire.errors import VoicemeshError

Report = Callable[[str], None]


@dataclass(frozen=True)
class Recovery:
    names: tuple[str, ...]
    seconds: float
    """From the poll that found them dead to Terraform's apply returning (they answer health)."""


class Supervisor:
    def __init__(
        self,
        env: Environment,
        *,
        report: Report,
        poll_s: float = 0.25,
        retry_s: float = 5.0,
        on_recovery: Callable[[Recovery], None] | None = None,
    ) -> None:
        self.env = env
        self.report = report
        self.poll_s = poll_s
        self.retry_s = retry_s
        self.on_recovery = on_recovery
        self.recoveries: list[Recovery] = []

    def _dead(self, specs: list[ProcessSpec]) -> list[ProcessSpec]:
        return [p for p in specs if not is_alive(read_pid(p.pid_file), p.match)]

    async def run(self, stop: asyncio.Event) -> None:
        """Watch and heal until ``stop`` is set."""
        specs = await asyncio.to_thread(lambda: self.env.deployment().processes)
        self.report(f"supervisor: watching {len(specs)} process(es) every {self.poll_s:g} s")
        while not stop.is_set():
            dead = self._dead(specs)
            if dead:
                specs = await self._heal(dead, specs)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_s)

    async def _heal(self, dead: list[ProcessSpec], specs: list[ProcessSpec]) -> list[ProcessSpec]:
        names = tuple(p.name for p in dead)
        t0 = time.monotonic()
        self.report(f"supervisor: {', '.join(names)} died; re-provisioning (terraform apply -replace)")
        try:
            healed = await self.env.heal(dead)  # only what the state still holds
        except VoicemeshError as exc:
            self.report(f"supervisor: re-provisioning failed, retrying in {self.retry_s:g} s: {exc.message}")
            await asyncio.sleep(self.retry_s)
            return specs
        took = time.monotonic() - t0
        if not healed:
            self.report("supervisor: no longer in the Terraform state (or healed by another); nothing to do")
        else:
            recovery = Recovery(tuple(p.name for p in healed), took)
            self.recoveries.append(recovery)
            if self.on_recovery:
                self.on_recovery(recovery)
            self.report(f"supervisor: {', '.join(recovery.names)} recovered in {took:.1f} s (healthy again)")
        return await asyncio.to_thread(lambda: self.env.deployment().processes)
