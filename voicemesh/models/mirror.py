"""Models that no PyPI package carries (the gpu profile's), copied from a mirror the operator fills.

A mirror is any directory or bucket reachable as ``file://`` or ``http(s)://`` (a bucket's HTTPS
endpoint, a signed URL prefix, or a bucket mounted as a volume) laid out as the models directory
itself, plus a ``manifest.json`` that ``voicemesh models manifest DIR`` writes::

    <source>/manifest.json            {"format", "models": {name: {"files": {path: {sha256, size}}}}}
    <source>/qwen3-8b/config.json ... one directory per model, as vLLM / faster-whisper read it
    <source>/whisper-large-v3/model.bin ...
    <source>/kokoro-fp32/kokoro-v1.0.onnx ...

Every file is checked against the manifest's sha256 as it streams in and lands atomically; a model
whose files were all verified before is not downloaded again. Nothing here ever asks a model hub.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from voicemesh.models.catalog import MirroredModel
from wire.errors import ModelCorrupt, ModelMissing
from wire.files import atomic_path, atomic_write

Report = Callable[[str], None]

MANIFEST = "manifest.json"
FORMAT = "voicemesh-models/1"
_CHUNK = 4 << 20
_REPORT_EVERY_S = 5.0


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def write_manifest(root: Path, models: tuple[MirroredModel, ...], report: Report) -> dict[str, Any]:
    """Hash every file of each model's directory under ``root`` and write ``root/manifest.json``
    (what an operator runs once on the directory before copying it to the bucket)."""
    entries: dict[str, Any] = {}
    for model in models:
        directory = root / model.name
        missing = [f for f in model.required if not (directory / f).is_file()]
        if missing:
            raise ModelMissing(
                f"{directory}: {', '.join(missing)} missing; {model.name} is made with: {model.how_to_make}"
            )
        files: dict[str, dict[str, object]] = {}
        for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
            rel = path.relative_to(directory).as_posix()
            report(f"{model.name}/{rel}: hashing ({path.stat().st_size / 1e6:.0f} MB)")
            files[rel] = {"sha256": sha256_file(path), "size": path.stat().st_size}
        entries[model.name] = {"files": files}
    manifest = {"format": FORMAT, "models": entries}
    atomic_write(root / MANIFEST, json.dumps(manifest, indent=1).encode())
    return manifest


def _safe_relative(name: str, rel: str) -> PurePosixPath:
    """A manifest path inside its model's directory (never absolute, never ``..``)."""
    path = PurePosixPath(rel)
    if path.is_absolute() or not path.parts or ".." in path.parts:
        raise ModelCorrupt(
            f"the mirror's manifest lists {name}/{rel}: not a path inside the model's directory"
        )
    return path


class Mirror:
    """Reads a mirror at ``source`` (``file://``, ``http://`` or ``https://``; a bare path is a directory)."""

    def __init__(self, source: str, *, timeout_s: float = 60.0) -> None:
        parts = urlsplit(source)
        self.source = source.rstrip("/")
        self._dir = Path(unquote(parts.path)) if parts.scheme in ("", "file") else None
        if self._dir is None and parts.scheme not in ("http", "https"):
            raise ModelMissing(
                f"model source {source!r}: use a file:// path, a directory, or an http(s):// URL "
                "(a bucket's HTTPS endpoint or a bucket mounted as a volume)"
            )
        self._client = (
            None if self._dir is not None else httpx.Client(timeout=timeout_s, follow_redirects=True)
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def _chunks(self, rel: str) -> Iterator[bytes]:
        if self._dir is not None:
            try:
                with (self._dir / rel).open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        yield chunk
            except OSError as exc:
                raise ModelMissing(f"{self.source}/{rel}: {exc.strerror or exc}") from exc
            return
        assert self._client is not None
        url = f"{self.source}/{rel}"
        try:
            with self._client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise ModelMissing(
                        f"{url}: HTTP {response.status_code}; check the source URL and that the mirror "
                        "holds it"
                    )
                yield from response.iter_bytes(_CHUNK)
        except httpx.HTTPError as exc:
            raise ModelMissing(f"{url}: {type(exc).__name__}: {exc}; is the model source reachable?") from exc

    def manifest(self) -> dict[str, Any]:
        raw = b"".join(self._chunks(MANIFEST))
        try:
            manifest = json.loads(raw)
        except ValueError as exc:
            raise ModelCorrupt(f"{self.source}/{MANIFEST} is not JSON: {exc}") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ModelCorrupt(
                f"{self.source}/{MANIFEST} is not a {FORMAT} manifest: "
                "write it with `voicemesh models manifest DIR`"
            )
        return manifest

    def fetch(self, model: MirroredModel, models_dir: Path, manifest: dict[str, Any], report: Report) -> Path:
        """Copy ``model`` into ``models_dir/<name>`` unless it is there and verified already."""
        out = models_dir / model.name
        entry = manifest.get("models", {}).get(model.name)
        if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
            raise ModelMissing(
                f"{self.source}/{MANIFEST} has no {model.name}; made with: {model.how_to_make}"
            )
        files: dict[str, dict[str, Any]] = entry["files"]
        missing = [f for f in model.required if f not in files]
        if missing:
            raise ModelMissing(
                f"the mirror's {model.name} lacks {', '.join(missing)}; made with: {model.how_to_make}"
            )
        wanted = {rel: str(meta["sha256"]) for rel, meta in files.items()}
        verified = out / ".verified"
        try:
            if json.loads(verified.read_text()) == wanted and all((out / rel).is_file() for rel in wanted):
                return out
        except (OSError, ValueError):
            pass
        total = sum(int(meta.get("size", 0)) for meta in files.values())
        report(f"{model.name}: copying {len(files)} file(s), {total / 1e9:.1f} GB, from {self.source}")
        for rel, meta in sorted(files.items()):
            self._fetch_file(model.name, _safe_relative(model.name, rel), str(meta["sha256"]), out, report)
        verified.write_text(json.dumps(wanted, indent=1))
        return out

    def _fetch_file(self, name: str, rel: PurePosixPath, sha256: str, out: Path, report: Report) -> None:
        dest = out / rel
        if dest.is_file() and sha256_file(dest) == sha256:
            return  # an earlier, interrupted fetch got this one whole
        digest = hashlib.sha256()
        done, last = 0, time.monotonic()
        with atomic_path(dest) as tmp, tmp.open("wb") as f:
            for chunk in self._chunks(f"{name}/{rel.as_posix()}"):
                digest.update(chunk)
                f.write(chunk)
                done += len(chunk)
                if time.monotonic() - last > _REPORT_EVERY_S:
                    report(f"{name}/{rel}: {done / 1e6:.0f} MB")
                    last = time.monotonic()
            f.flush()
            if digest.hexdigest() != sha256:
                raise ModelCorrupt(
                    f"{name}/{rel}: sha256 {digest.hexdigest()} != the manifest's {sha256}; the mirror's "
                    "copy is damaged or the manifest is stale: re-run `voicemesh models manifest` there"
                )
