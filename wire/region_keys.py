"""The region key set: the shared secrets that edges sign region tokens with (``wire.region_auth``).

One JSON file, mode 0600, written only by voicemesh (``voicemesh infra rotate-key``, or before a
``terraform apply``) and never put in Terraform state or the registry::

    {"keys": [{"kid": "k-20261123t084200-1a2b", "secret": "<base64url, 32 bytes>",
               "created": 1795423320.0, "sign_from": 1795423320.0, "retire_at": null}],
     "metrics": [{"kid": "m-20261123t084200-3c4d", "sha256": "<hex>",
                  "created": 1795423320.0, "retire_at": null}]}

Rotation without downtime:

* a new key is added with ``sign_from`` (now, or later when the file takes time to reach every
  region, e.g. a Kubernetes Secret: ``activate_in_s``). Regions accept it as soon as they read it;
  edges sign with it from ``sign_from`` on.
* the key it replaces gets ``retire_at = sign_from + MAX_TOKEN_TTL_S + LEEWAY_S``: after that no
  token signed with it can still be valid, so regions refuse it and the next rotation drops it.

The metrics credential is the scraper's: a long-lived random bearer secret (``vmm_`` + 32 bytes)
that regions accept on ``GET /metrics`` only. The file keeps only its SHA-256, under ``"metrics"``
(``{"kid", "sha256", "created", "retire_at"}``), so whoever reads the key set cannot present it;
the raw secret is written once, beside the key file (``metrics_token_path``, 0600), for the
scraper. It rotates like the keys: the new one is accepted at once, the old one for an overlap.

``KeyFile`` re-reads the file whenever its stamp changes (checked on use: a stat, no watcher
thread), so neither tier needs a restart; a broken file keeps the last good set in force.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import msgspec

from wire.errors import VoicemeshError
from wire.files import atomic_path

log = logging.getLogger(__name__)

MAX_TOKEN_TTL_S = 300.0
"""The longest lifetime a region accepts for a token (``exp - iat``); edges mint shorter ones."""
LEEWAY_S = 30.0
"""Clock skew tolerated between an edge and a region."""
SECRET_BYTES = 32
METRICS_PREFIX = "vmm_"
"""Marks a metrics credential, so a region tells it from a region token without trying either."""
METRICS_OVERLAP_S = 900.0
"""How long a replaced metrics credential stays accepted: time for the new secret to reach the
scraper (a Kubernetes Secret: ~2 min) and for several scrapes to use it."""


class KeySetError(VoicemeshError):
    code = "region_keys_invalid"


class RegionKey(msgspec.Struct, frozen=True, kw_only=True):
    kid: str
    secret: str
    """base64url of ``SECRET_BYTES`` random bytes."""
    created: float
    sign_from: float
    retire_at: float | None = None

    @property
    def secret_bytes(self) -> bytes:
        return base64.urlsafe_b64decode(self.secret + "=" * (-len(self.secret) % 4))

    def accepted(self, now: float) -> bool:
        return self.retire_at is None or now < self.retire_at

    def __repr__(self) -> str:  # never print a secret by accident
        return f"RegionKey(kid={self.kid!r}, sign_from={self.sign_from}, retire_at={self.retire_at})"


class MetricsCredential(msgspec.Struct, frozen=True, kw_only=True):
    """The scraper's credential as a region knows it: a hash, never the secret."""

    kid: str
    sha256: str
    """hex SHA-256 of the raw ``vmm_`` secret (which lives only in the scraper's file)."""
    created: float
    retire_at: float | None = None

    def accepted(self, now: float) -> bool:
        return self.retire_at is None or now < self.retire_at


class KeySet(msgspec.Struct, frozen=True, kw_only=True):
    keys: list[RegionKey] = msgspec.field(default_factory=list)
    metrics: list[MetricsCredential] = msgspec.field(default_factory=list)

    def metrics_hashes(self, now: float) -> list[str]:
        """SHA-256 (hex) of every metrics credential a region accepts now."""
        return [c.sha256 for c in self.metrics if c.accepted(now)]

    def accepted(self, now: float) -> dict[str, RegionKey]:
        """kid -> key, for every key a region accepts now."""
        return {k.kid: k for k in self.keys if k.accepted(now)}

    def signing_key(self, now: float) -> RegionKey:
        """The newest key already active: the one edges sign with."""
        usable = [k for k in self.keys if k.sign_from <= now and k.accepted(now)]
        if not usable:
            raise KeySetError("the region key set has no active key: run `voicemesh infra rotate-key`")
        return max(usable, key=lambda k: (k.sign_from, k.created))


def _new_kid(prefix: str, now: float) -> str:
    return f"{prefix}-{time.strftime('%Y%m%dt%H%M%S', time.gmtime(now))}-{secrets.token_hex(2)}"


def _new_secret() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(SECRET_BYTES)).decode().rstrip("=")


def new_key(now: float, *, activate_in_s: float = 0.0) -> RegionKey:
    return RegionKey(kid=_new_kid("k", now), secret=_new_secret(), created=now, sign_from=now + activate_in_s)


def hash_metrics_token(token: str) -> str:
    """What a region compares: 32 random bytes need no slow hash to resist guessing."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_metrics_credential(now: float) -> tuple[str, MetricsCredential]:
    """(raw secret for the scraper, its record for the key set)."""
    token = METRICS_PREFIX + _new_secret()
    return token, MetricsCredential(kid=_new_kid("m", now), sha256=hash_metrics_token(token), created=now)


def metrics_token_path(keys_path: Path) -> Path:
    """Where the raw metrics secret is written: beside the key file (``region-keys.metrics-token``)."""
    return keys_path.with_suffix(".metrics-token")


def read_key_set(path: Path) -> KeySet:
    try:
        keys = msgspec.json.decode(path.read_bytes(), type=KeySet)
    except FileNotFoundError as exc:
        raise KeySetError(
            f"no region key file at {path}: create one with `voicemesh infra rotate-key`"
        ) from exc
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise KeySetError(f"region key file {path} is unreadable: {exc}") from exc
    for key in keys.keys:
        if len(key.secret_bytes) < SECRET_BYTES:
            raise KeySetError(f"region key {key.kid} in {path} is shorter than {SECRET_BYTES} bytes")
    for cred in keys.metrics:
        if len(cred.sha256) != 64 or cred.sha256.strip("0123456789abcdef"):
            raise KeySetError(f"metrics credential {cred.kid} in {path} is not a hex SHA-256")
    return keys


def _write_private(path: Path, data: bytes) -> None:
    """Atomically, readable by the owner only (the file is a secret)."""
    with atomic_path(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o600)


def write_key_set(path: Path, keys: KeySet) -> None:
    _write_private(path, msgspec.json.format(msgspec.json.encode(keys), indent=1))


@dataclass(frozen=True)
class Rotation:
    """What a rotation of the keys (or of the metrics credentials) did, by id."""

    added: str
    retiring: list[str]
    """Those that stop being accepted at ``retire_at`` (tokens signed before then stay valid)."""
    dropped: list[str]
    """Those removed from the file: past their ``retire_at``."""


_Credential = TypeVar("_Credential", RegionKey, MetricsCredential)


def _retire(
    current: list[_Credential], retire_at: float, now: float
) -> tuple[list[_Credential], list[str], list[str]]:
    """(kept, retiring, dropped): credentials already retired are dropped; the others retire at
    ``retire_at`` at the latest."""
    kept: list[_Credential] = []
    retiring: list[str] = []
    dropped: list[str] = []
    for item in current:
        if not item.accepted(now):
            dropped.append(item.kid)
            continue
        if item.retire_at is None or item.retire_at > retire_at:
            item = msgspec.structs.replace(item, retire_at=retire_at)
            retiring.append(item.kid)
        kept.append(item)
    return kept, retiring, dropped


def ensure_key_set(path: Path, *, now: float | None = None) -> bool:
    """Create the key file with one key if it does not exist; True when it was created."""
    if path.exists():
        read_key_set(path)  # a broken file is an error here, not something to overwrite
        return False
    write_key_set(path, KeySet(keys=[new_key(time.time() if now is None else now)]))
    return True


def rotate_key_set(path: Path, *, activate_in_s: float = 0.0, now: float | None = None) -> Rotation:
    """Add a key; schedule the retirement of the one it replaces; drop keys already retired."""
    now = time.time() if now is None else now
    current = read_key_set(path) if path.exists() else KeySet()
    added = new_key(now, activate_in_s=activate_in_s)
    kept, retiring, dropped = _retire(current.keys, added.sign_from + MAX_TOKEN_TTL_S + LEEWAY_S, now)
    write_key_set(path, msgspec.structs.replace(current, keys=[*kept, added]))
    return Rotation(added=added.kid, retiring=retiring, dropped=dropped)


def rotate_metrics_credential(
    path: Path,
    token_path: Path | None = None,
    *,
    overlap_s: float = METRICS_OVERLAP_S,
    now: float | None = None,
) -> Rotation:
    """Add a metrics credential (its hash to the key file, the secret to ``token_path``, 0600); the one
    it replaces stays accepted for ``overlap_s``; drop those already retired."""
    now = time.time() if now is None else now
    current = read_key_set(path)
    token, added = new_metrics_credential(now)
    kept, retiring, dropped = _retire(current.metrics, now + overlap_s, now)
    # Hash first: a crash in between leaves an accepted hash without its secret, never a secret
    # that no region accepts.
    write_key_set(path, msgspec.structs.replace(current, metrics=[*kept, added]))
    _write_private(token_path or metrics_token_path(path), token.encode())
    return Rotation(added=added.kid, retiring=retiring, dropped=dropped)


def ensure_metrics_credential(
    path: Path, token_path: Path | None = None, *, now: float | None = None
) -> bool:
    """Give the key set a metrics credential if it accepts none; True when one was made."""
    now = time.time() if now is None else now
    if read_key_set(path).metrics_hashes(now):
        return False
    rotate_metrics_credential(path, token_path, now=now)
    return True


class KeyFile:
    """A key set file, re-read when its stamp changes; the last good set stays if it breaks."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._stamp = self._read_stamp()
        self._keys = read_key_set(self.path)  # a missing or broken file at start is a clear error
        self.reloads = 0

    def _read_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def reload(self) -> None:
        """Re-read now (SIGHUP); errors are logged and the previous set kept."""
        self._stamp = None
        self.current()

    def current(self) -> KeySet:
        stamp = self._read_stamp()
        if stamp is not None and stamp != self._stamp:
            self._stamp = stamp
            try:
                self._keys = read_key_set(self.path)
                self.reloads += 1
            except KeySetError as exc:
                log.error("%s; keeping the previous region keys", exc.message)
        return self._keys
