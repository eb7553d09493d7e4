"""``requirements.lock``: the image's runtime dependencies, pinned with hashes for CPython 3.11 on
x86_64 Linux (what Debian bookworm's python3 is), resolved from pyproject.toml's
``[project.dependencies]`` (no extras: no dev tools in the image) by ``uv pip compile``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from infra.image.build import LOCK, ImageBuildError, Report, checkout_root

# The platform of the image (bookworm: glibc 2.36, CPython 3.11).
COMPILE_ARGS = (
    "pip", "compile", "pyproject.toml", "--generate-hashes", "--python-version", "3.11",
    "--python-platform", "x86_64-manylinux_2_28", "--quiet",
    "--custom-compile-command", "voicemesh image lock", "-o", "infra/image/requirements.lock",
)  # fmt: skip
COMMAND = "uv " + " ".join(COMPILE_ARGS)
"""What ``voicemesh image lock`` runs, from the checkout's root."""


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        raise ImageBuildError("uv is missing: `make python-env` installs it (the dev extra), then retry")
    return found


def compile_lock(report: Report = print) -> Path:
    """Re-resolve the lock (newest versions pyproject allows) and write it in place."""
    root = checkout_root()
    report(f"lock: {COMMAND}")
    proc = subprocess.run([_uv(), *COMPILE_ARGS], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageBuildError(f"uv pip compile failed:\n{proc.stderr[-3000:]}\nCheck that PyPI is reachable.")
    pins = sum(1 for line in LOCK.read_text().splitlines() if "==" in line and not line.startswith(" "))
    report(f"lock: {pins} packages pinned with hashes in {LOCK}")
    return LOCK
