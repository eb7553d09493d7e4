"""What a deployment started, written down before it is started, so nothing outlives a lost ``up``.

The ledger (``<state>/ledger.json``, replaced atomically) names the deployment's *owner* (the
foreground ``up`` or the ``supervise`` that ``up --detach`` leaves) and one entry per thing it
starts: a pid it spawned itself, a directory of pid files (Terraform's local processes write
theirs there), the ports they will listen on. An entry is saved before the start, so a ``up``
killed at any moment (even by SIGKILL) leaves enough for ``voicemesh down`` to find everything.
Everything started also carries ``TAG_ENV`` in its environment (see ``voicemesh.processes.sweep``),
the net for what no entry names yet (a child started between two writes).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wire.files import atomic_write

TAG_ENV = "VOICEMESH_DEPLOYMENT"
"""Environment variable every process of a local deployment inherits: the deployment's state
directory. Processes are found by it even when no pid file survived."""


@dataclass
class Entry:
    name: str
    pid: int | None = None
    """A process we spawned ourselves (it leads its own process group)."""
    pid_dir: str | None = None
    """A directory whose ``*.pid`` files name processes of this entry (Terraform's run dir)."""
    ports: list[int] = field(default_factory=list)
    """Where its processes listen: free again once it is stopped."""
    match: str = ""
    """Text in the command line of its processes (guards a pid reused by someone else)."""

    def pids(self) -> list[int]:
        found = [self.pid] if self.pid is not None else []
        if self.pid_dir:
            for path in sorted(Path(self.pid_dir).glob("*.pid")):
                try:
                    found.append(int(path.read_text().strip()))
                except (OSError, ValueError):
                    continue  # half-written or just removed: the tag still finds the process
        return found


@dataclass
class Ledger:
    path: Path
    tag: str
    owner: int | None = None
    """The pid that runs this deployment (a foreground ``up``, or ``supervise``)."""
    entries: list[Entry] = field(default_factory=list)
    detached: bool = False
    """Left running on purpose with no owner (``up --detach --no-supervise``): not leftovers."""

    @classmethod
    def load(cls, state_dir: Path) -> Ledger:
        """The ledger of the deployment kept in ``state_dir`` (empty when there is none)."""
        path = state_dir / "ledger.json"
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls(path=path, tag=str(state_dir))
        return cls(
            path=path,
            tag=str(state_dir),
            owner=data.get("owner"),
            detached=bool(data.get("detached", False)),
            entries=[Entry(**e) for e in data.get("entries", [])],
        )

    def save(self) -> None:
        body = {"owner": self.owner, "detached": self.detached, "entries": [asdict(e) for e in self.entries]}
        atomic_write(self.path, json.dumps(body, indent=1).encode())

    def record(self, entry: Entry) -> None:
        """Add (or replace, by name) an entry and save: call it *before* starting what it names."""
        self.entries = [e for e in self.entries if e.name != entry.name] + [entry]
        self.save()

    def ports(self) -> list[int]:
        return sorted({p for e in self.entries for p in e.ports})

    def is_empty(self) -> bool:
        return self.owner is None and not self.entries

    def clear(self) -> None:
        """Everything it named is stopped: forget it, and the pid files left by what is gone (they
        would only mislead `voicemesh infra status`)."""
        for entry in self.entries:
            if entry.pid_dir:
                for stale in (*Path(entry.pid_dir).glob("*.pid"), *Path(entry.pid_dir).glob("*.ready")):
                    stale.unlink(missing_ok=True)
        self.owner = None
        self.detached = False
        self.entries = []
        self.path.unlink(missing_ok=True)
