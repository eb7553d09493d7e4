"""Where voicemesh keeps what it installs and what it runs (per user, outside the checkout)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def home() -> Path:
    """The per-user cache: models, the vLLM runtime, deployment state. ``VOICEMESH_HOME`` overrides."""
    env = os.environ.get("VOICEMESH_HOME")
    return Path(env) if env else Path(platformdirs.user_cache_dir("voicemesh"))


def models_dir() -> Path:
    return home() / "models"


def packages_dir() -> Path:
    return home() / "packages"


def runtimes_dir() -> Path:
    return home() / "runtimes"


def state_dir() -> Path:
    return home() / "state"
