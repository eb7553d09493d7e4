"""Atomic file replacement: a reader (a reloading edge, a second CLI, an interrupted fetch) sees the
old file or the new one, never half of one.

    with atomic_path(dest) as tmp:      # write tmp however you like; dest is replaced on success
        tmp.write_bytes(data)
    atomic_write(dest, data)            # the common case
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(dest: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``dest``; on success it replaces ``dest`` (same filesystem, so
    ``rename`` is atomic); on any error it is removed and ``dest`` is left as it was."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        yield tmp
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write(dest: Path, data: bytes) -> None:
    with atomic_path(dest) as tmp:
        tmp.write_bytes(data)
