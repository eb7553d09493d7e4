"""The one place that talks to Terraform: a small adapter over python-terraform 0.10.1.

python-terraform (2019) needs care with Terraform 1.x, and every quirk is handled here only:

* ``apply`` must be called with ``skip_plan=True`` (that is what sends ``-auto-approve``);
* ``destroy`` sends ``-force`` by default, which 1.x rejects: pass ``force=IsNotFlagged`` and
  ``auto_approve=IsFlagged``;
* ``plan`` runs with ``-detailed-exitcode``: exit 2 means "changes", not failure;
* ``output(name, full_value=True)`` returns ``{"value", "type", "sensitive"}``; without a name,
  a dict of those; ``None`` on any error (so errors are re-run through ``output_cmd``);
* default options (``-state``, ``-var-file``) are added to every command, ``init`` included,
  where 1.x rejects them: they are switched off per call;
* variables go through a temporary ``.tfvars.json`` per call (deleted afterwards); it has no
  context manager, and it copies ``os.environ`` for the child, so the toolchain's environment is
  put into ``os.environ`` for the duration of a call.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from python_terraform import IsFlagged, IsNotFlagged, Terraform

from infra.errors import TerraformFailed
from infra.tooling import Toolchain

_ENV_LOCK = threading.Lock()
LOCK_TIMEOUT = "120s"
"""How long an apply waits for another one's state lock (a supervisor healing while `infra up` runs)."""
# It logs every failure's raw stderr as bytes at WARNING; the errors raised here carry it readably.
logging.getLogger("python_terraform").setLevel(logging.ERROR)
log = logging.getLogger(__name__)


@contextmanager
def _environ(extra: Mapping[str, str]) -> Iterator[None]:
    """``extra`` in ``os.environ`` for one call (python-terraform copies it for the child)."""
    with _ENV_LOCK, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The 'warn' method", DeprecationWarning)  # its log.warn()
        saved = {k: os.environ.get(k) for k in extra}
        os.environ.update(extra)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _set_aside_if_damaged(state: Path) -> None:
    """A Terraform killed while writing its state leaves an empty or cut file, which python-terraform
    cannot even load. Its processes are found without it (pid files, the deployment tag): move it
    aside (``.damaged``) so Terraform starts from an empty state instead of failing forever."""
    try:
        text = state.read_text()
        if text.strip():
            json.loads(text)
            return
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        pass
    log.warning("Terraform state %s is damaged (an interrupted run); moved aside to .damaged", state)
    state.replace(state.with_name(state.name + ".damaged"))


def _tail(text: str | None, lines: int = 40) -> str:
    return "\n".join((text or "").strip().splitlines()[-lines:])


class TerraformAdapter:
    """Terraform in ``workdir`` with its state in ``state`` (both outside the checkout)."""

    def __init__(
        self, workdir: Path, *, toolchain: Toolchain, state: Path, extra_env: Mapping[str, str] | None = None
    ) -> None:
        self.workdir = workdir
        self.state = state
        self._toolchain = toolchain
        self._env = {**toolchain.env(), **(extra_env or {})}
        """What every Terraform run (and so every process its provisioners start) gets besides ours."""
        _set_aside_if_damaged(state)
        self._tf = Terraform(
            working_dir=str(workdir), state=str(state), terraform_bin_path=str(toolchain.terraform)
        )

    def _run(self, what: str, call: Any, *, ok: Sequence[int] = (0,), hint: str) -> tuple[int, str]:
        with _environ(self._env):
            rc, out, err = call()
        if rc not in ok:
            raise TerraformFailed(
                f"terraform {what} failed (exit {rc}) in {self.workdir}:\n{_tail(err) or _tail(out)}\n{hint}"
            )
        return int(rc), str(out or "")

    def init(self) -> None:
        """Install the providers from the local mirror (offline; ~1 s)."""
        self._run(
            "init",
            lambda: self._tf.init(state=None, var=None, reconfigure=IsNotFlagged, upgrade=IsNotFlagged),
            hint="Check `voicemesh infra install` (it lays out the provider mirror), then retry.",
        )

    def plan_has_changes(self, variables: Mapping[str, object]) -> bool:
        rc, _ = self._run(
            "plan",
            lambda: self._tf.plan(var=dict(variables)),
            ok=(0, 2),
            hint="Fix the variables or the configuration shown above, then retry.",
        )
        return rc == 2

    def planned_outputs(self, variables: Mapping[str, object]) -> dict[str, Any]:
        """The outputs a plan with ``variables`` knows before anything runs (nothing is applied: a plan
        of the local env starts no process): for comparing what an env would run, offline."""
        hint = "Fix the variables or the configuration shown above, then retry."
        self._run("plan", lambda: self._tf.plan(var=dict(variables), out="plan.bin"), ok=(0, 2), hint=hint)
        _, shown = self._run("show", lambda: self._tf.cmd("show", "plan.bin", json=IsFlagged), hint=hint)
        outputs = json.loads(shown).get("planned_values", {}).get("outputs", {})
        return {name: item.get("value") for name, item in outputs.items()}

    def apply(
        self, variables: Mapping[str, object], *, replace: Sequence[str] = (), refresh: bool = True
    ) -> str:
        """Create or update everything; ``replace`` forces those addresses to be recreated.
        ``refresh=False`` skips reading every resource back first (a null_resource has nothing to
        read: it only costs time when a supervisor is healing)."""
        _, out = self._run(
            "apply",
            lambda: self._tf.apply(
                skip_plan=True,
                var=dict(variables),
                replace=list(replace) or None,
                lock_timeout=LOCK_TIMEOUT,
                refresh=None if refresh else False,
            ),
            hint="Read the provisioner output above (it ends with the process log), fix it, run `up` again.",
        )
        return _summary(out)

    def destroy(self, variables: Mapping[str, object]) -> str:
        _, out = self._run(
            "destroy",
            lambda: self._tf.destroy(
                force=IsNotFlagged, auto_approve=IsFlagged, var=dict(variables), lock_timeout=LOCK_TIMEOUT
            ),
            hint="Run `voicemesh infra down` again; if it keeps failing, stop the processes listed by "
            "`voicemesh infra status` by hand and delete the state file.",
        )
        return _summary(out)

    def outputs(self) -> dict[str, Any]:
        """Every output's value (empty when nothing is deployed)."""
        if not self.state.exists():
            return {}
        with _environ(self._toolchain.env()):
            found = self._tf.output(state=str(self.state))
        if found is None:  # python-terraform swallows the error: run it again to show why
            self._run(
                "output",
                lambda: self._tf.output_cmd(json=IsFlagged, state=str(self.state)),
                hint="The state file may be damaged; `voicemesh infra down` then `up` rebuilds it.",
            )
            return {}
        return {name: item["value"] for name, item in found.items()}

    def output(self, name: str) -> Any:
        with _environ(self._toolchain.env()):
            found = self._tf.output(name, full_value=True, state=str(self.state))
        return None if found is None else found["value"]

    def addresses(self) -> set[str]:
        """Every resource instance's address, read from the state file itself (no Terraform run:
        a supervisor asks this before each heal). Empty when nothing is deployed."""
        try:
            state = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return set()
        found = set()
        for r in state.get("resources", []):
            if r.get("mode") != "managed":
                continue
            base = ".".join(p for p in (r.get("module", ""), r["type"], r["name"]) if p)
            for inst in r.get("instances", []):
                key = inst.get("index_key")
                found.add(base if key is None else f"{base}[{json.dumps(key)}]")
        return found

    def resources(self) -> list[str]:
        """Addresses in the state (``terraform state list``)."""
        if not self.state.exists():
            return []
        _, out = self._run(
            "state list",
            lambda: self._tf.cmd("state list", state=str(self.state)),
            hint="The state file may be damaged.",
        )
        return [line.strip() for line in out.splitlines() if line.strip()]


def _summary(out: str) -> str:
    """Terraform's one-line result, e.g. ``Apply complete! Resources: 2 added, 0 changed, 0 destroyed.``"""
    for line in reversed(out.splitlines()):
        if "complete!" in line:
            return line.strip()
    return _tail(out, 1)
