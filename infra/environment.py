"""One Terraform environment (``infra/envs/<name>``) deployed from a per-user working copy.

The checkout is never written to: modules and the environment are copied into
``<state_root>/work`` and Terraform runs there, with its state, variables, pid and log files
beside it. ``up`` is idempotent and replaces any process that died; ``heal`` does only that, fast,
for a supervisor; ``down`` verifies that no process and no listening port is left. One operation
at a time per environment (a file lock): a supervisor's heal and a person's ``infra up`` queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.errors import EnvironmentMissing, InfraError
from infra.processes import (
    HeadersFor,
    ProcessSpec,
    ProcessStatus,
    check_all,
    is_alive,
    no_headers,
    port_open,
    read_pid,
)
from infra.terraform import TerraformAdapter
from infra.tooling import Toolchain

Report = Callable[[str], None]

INFRA_ROOT = Path(__file__).resolve().parent
"""Where the Terraform sources live (``modules/``, ``envs/``)."""

_KEEP = {".terraform", ".terraform.lock.hcl"}


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Deployment:
    """What an environment's outputs say is deployed."""

    regions: list[dict[str, Any]] = field(default_factory=list)
    """Registry records: id, url, location {lat, lon}, residency, capacity."""
    llm_url: str = ""
    processes: list[ProcessSpec] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    """id, url (http), location {lat, lon} of each edge (none when the env runs regions only)."""
    frontdoor: dict[str, Any] | None = None
    """url (what clients use), stats_url and the edges behind it; None without a front door."""
    prometheus: dict[str, Any] | None = None
    """url (UI and HTTP API) and the targets it scrapes; None without it."""

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any]) -> Deployment:
        return cls(
            regions=list(outputs.get("regions") or []),
            edges=list(outputs.get("edges") or []),
            frontdoor=dict(outputs["frontdoor"]) if outputs.get("frontdoor") else None,
            prometheus=dict(outputs["prometheus"]) if outputs.get("prometheus") else None,
            llm_url=str(outputs.get("llm_url") or ""),
            processes=[ProcessSpec.from_output(a, v) for a, v in (outputs.get("processes") or {}).items()],
        )


def available_envs(root: Path = INFRA_ROOT) -> list[str]:
    return sorted(p.name for p in (root / "envs").iterdir() if p.is_dir() and any(p.glob("*.tf")))


class Environment:
    def __init__(
        self,
        name: str,
        *,
        state_root: Path,
        toolchain: Toolchain,
        report: Report = _quiet,
        source_root: Path = INFRA_ROOT,
        process_env: Mapping[str, str] | None = None,
    ) -> None:
        """``process_env`` goes to every Terraform run, so to every process it starts (never a secret:
        a tag by which every process of this deployment can be found)."""
        if not (source_root / "envs" / name).is_dir():
            raise EnvironmentMissing(
                f"no environment '{name}' under {source_root / 'envs'}; choose one of: "
                + ", ".join(available_envs(source_root))
            )
        self.name = name
        self.source_root = source_root
        self.root = state_root
        self.work = state_root / "work"
        self.run_dir = state_root / "run"
        self.report = report
        self.terraform = TerraformAdapter(
            self.work / "envs" / name,
            toolchain=toolchain,
            state=state_root / "terraform.tfstate",
            extra_env=process_env,
        )
        self._variables_file = state_root / "variables.json"
        self._lock_file = state_root / "operation.lock"

    @contextlib.asynccontextmanager
    async def _exclusive(self, timeout_s: float = 600.0) -> AsyncIterator[None]:
        """One up/heal/down at a time for this environment, across processes (flock; released by
        the kernel if the holder dies)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise InfraError(
                            f"another voicemesh command has been changing {self.name} for {timeout_s:.0f} s; "
                            "wait for it, or stop it, and retry"
                        ) from None
                    await asyncio.sleep(0.2)
            yield
        finally:
            os.close(fd)  # releases the lock

    # -- variables ---------------------------------------------------------------------------

    def saved_variables(self) -> dict[str, object]:
        try:
            return dict(json.loads(self._variables_file.read_text()))
        except (OSError, ValueError):
            return {}

    def _variables(self, given: Mapping[str, object]) -> dict[str, object]:
        """The last run's variables overridden by ``given`` (so a bare ``up`` repeats the last one)."""
        merged = {**self.saved_variables(), **{k: v for k, v in given.items() if v is not None}}
        merged["run_dir"] = str(self.run_dir)
        return merged

    # -- lifecycle ---------------------------------------------------------------------------

    def _sync_sources(self) -> None:
        """Copy modules + the environment into the working copy, keeping Terraform's own files."""
        self.work.mkdir(parents=True, exist_ok=True)
        env_dir = self.terraform.workdir
        shutil.rmtree(self.work / "modules", ignore_errors=True)
        shutil.copytree(self.source_root / "modules", self.work / "modules")
        if env_dir.exists():
            for item in env_dir.iterdir():
                if item.name not in _KEEP:
                    shutil.rmtree(item) if item.is_dir() else item.unlink()
        shutil.copytree(
            self.source_root / "envs" / self.name,
            env_dir,
            dirs_exist_ok=True,
            # The committed lock file (provider checksums) comes along; Terraform's own dir does not.
            ignore=shutil.ignore_patterns(".terraform", "*.tfstate*"),
        )

    def deployment(self) -> Deployment:
        return Deployment.from_outputs(self.terraform.outputs())

    def planned_variables(self, given: Mapping[str, object]) -> dict[str, object]:
        """The variables the next ``up`` with ``given`` would apply (what a caller records first)."""
        return self._variables(given)

    async def up(self, variables: Mapping[str, object]) -> Deployment:
        """Create what is missing, restart what died; a healthy deployment is left as it is."""
        async with self._exclusive():
            values = self._variables(variables)
            self._sync_sources()
            self.run_dir.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(self.terraform.init)
            dead = self._dead(self.deployment().processes)
            for p in dead:
                self.report(f"{p.name}: its process is gone; Terraform will start it again")
            self._variables_file.write_text(json.dumps(values, indent=1))
            t0 = time.monotonic()
            self.report(f"terraform apply ({self.name}): starting processes and waiting for /health")
            summary = await self._with_progress(
                asyncio.to_thread(self.terraform.apply, values, replace=[p.address for p in dead])
            )
            self.report(f"{summary} ({time.monotonic() - t0:.1f} s)")
            return self.deployment()

    @staticmethod
    def _dead(processes: Sequence[ProcessSpec]) -> list[ProcessSpec]:
        return [p for p in processes if not is_alive(read_pid(p.pid_file), p.match)]

    async def heal(self, processes: Sequence[ProcessSpec]) -> list[ProcessSpec]:
        """Re-provision those of ``processes`` that are (still) dead: ``apply -replace`` with the last
        run's variables, without re-copying sources or re-running init (what a supervisor needs
        fast). Returns what was replaced (nothing when someone else healed them first)."""
        async with self._exclusive():
            # Again, under the lock; and only what the state still holds (after `infra down`
            # there is nothing to bring back: a -replace of it would create everything again).
            known = self.terraform.addresses()
            dead = [p for p in self._dead(processes) if p.address in known]
            if not dead:
                return []
            if not (self.terraform.workdir / ".terraform").is_dir():
                self._sync_sources()
                await asyncio.to_thread(self.terraform.init)
            values = self._variables({})
            await asyncio.to_thread(
                self.terraform.apply, values, replace=[p.address for p in dead], refresh=False
            )
            return dead

    async def down(self) -> None:
        """Destroy everything, then check that no process and no listening port is left."""
        async with self._exclusive():
            await self._down()

    async def _down(self) -> None:
        before = self.deployment()
        if not self.terraform.state.exists():
            self.report(f"{self.name}: nothing deployed")
            return
        values = self._variables({})
        self._sync_sources()
        await asyncio.to_thread(self.terraform.init)
        t0 = time.monotonic()
        self.report(f"terraform destroy ({self.name}): stopping {len(before.processes)} process(es)")
        summary = await asyncio.to_thread(self.terraform.destroy, values)
        self.report(f"{summary} ({time.monotonic() - t0:.1f} s)")
        left = [
            f"{p.name} (pid {read_pid(p.pid_file)})" if is_alive(read_pid(p.pid_file), p.match) else p.name
            for p in before.processes
            if is_alive(read_pid(p.pid_file), p.match) or port_open(p.health_url)
        ]
        if left:
            raise InfraError(
                f"still running or listening after destroy: {', '.join(left)}; "
                "stop them by hand (see `voicemesh infra status`)"
            )

    async def status(self, headers_for: HeadersFor = no_headers) -> list[ProcessStatus]:
        return await check_all(self.deployment().processes, headers_for=headers_for)

    async def _with_progress(self, work: Any) -> str:
        """Run ``work`` while reporting each process's start and readiness from its pid/ready files."""
        task: asyncio.Future[str] = asyncio.ensure_future(work)
        t0 = time.time()
        seen: set[Path] = set()
        while not task.done():
            await asyncio.wait({task}, timeout=0.5)
            if not self.run_dir.exists():
                continue
            for path in sorted(self.run_dir.iterdir()):
                if path in seen or path.suffix not in (".pid", ".ready") or path.stat().st_mtime < t0:
                    continue
                seen.add(path)
                if path.suffix == ".pid":
                    self.report(f"{path.stem}: started (pid {read_pid(path)}), warming up")
                else:
                    self.report(f"{path.stem}: ready after {time.time() - t0:.1f} s")
        return task.result()
