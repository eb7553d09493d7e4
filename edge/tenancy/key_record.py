"""What a stored API key is (``KeyRecord``: who, the hash of its secret, its policy, its history),
and where keys live: ``Records`` of the edge's stores (``edge/stores/base.py``), by id, with an index
from each live secret's SHA-256 to its key. A secret itself is never stored.

In memory a key made through one edge is known to it alone; in Redis (``voicemesh-keys:records``,
``voicemesh-keys:hashes``) to every edge. Redis is not replaced by a local copy while it is down (a
key made or revoked during an outage would differ between edges): calls raise
``KeyStoreUnavailable`` (HTTP 503), and ``edge/tenancy/keys.py`` decides what an edge may still trust
meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import msgspec

from edge.shared.errors import KeyStoreUnavailable
from edge.shared.key_policy import KeyPolicy, policy_from_claims
from edge.stores.base import Records
from edge.stores.memory import MemoryRecords
from edge.stores.redis.records import RedisRecords
from wire.bounded_redis import BoundedRedis

NAMESPACE = "voicemesh-keys"


class KeyRecord(msgspec.Struct, kw_only=True):
    """One stored key: who it is, the hash of its secret, its policy, and its history."""

    id: str
    name: str
    secret_sha256: str
    residency: list[str] | None = None
    max_sessions: int | None = None
    rate_per_s: float | None = None
    burst: int | None = None
    voices: list[str] | None = None
    priority: str = "normal"
    on_no_region: str = "edge_voice"
    created_at: float
    rotated_at: float | None = None
    revoked_at: float | None = None
    previous_sha256: str | None = None
    """The secret before the last rotation, still accepted until ``previous_until`` (a grace period)."""
    previous_until: float | None = None

    def policy_fields(self) -> dict[str, object]:
        """The policy as ``policy_from_claims`` reads it (and the admin API shows it)."""
        return {
            "residency": self.residency,
            "max_sessions": self.max_sessions,
            "rate_per_s": self.rate_per_s,
            "burst": self.burst,
            "voices": self.voices,
            "priority": self.priority,
            "on_no_region": self.on_no_region,
        }

    def policy(self) -> KeyPolicy:
        return policy_from_claims(self.policy_fields())

    def accepts(self, secret_sha256: str, now: float | None = None) -> bool:
        """Whether a secret with this hash opens this key now (not revoked; current, or the
        previous one within its grace period)."""
        if self.revoked_at is not None:
            return False
        if secret_sha256 == self.secret_sha256:
            return True
        now = time.time() if now is None else now
        return secret_sha256 == self.previous_sha256 and (self.previous_until or 0.0) > now

    def public(self) -> dict[str, Any]:
        """What the admin API shows: everything but the hashes."""
        return {
            "id": self.id,
            "object": "api_key",
            "name": self.name,
            **self.policy_fields(),
            "created_at": self.created_at,
            "rotated_at": self.rotated_at,
            "revoked_at": self.revoked_at,
            "previous_secret_valid_until": self.previous_until if self.previous_sha256 else None,
        }


KeyStore = Records[KeyRecord]


def live_hashes(record: KeyRecord) -> list[str]:
    """The secret hashes that open the key (none once it is revoked)."""
    if record.revoked_at is not None:
        return []
    return [h for h in (record.secret_sha256, record.previous_sha256) if h]


async def save_key(store: KeyStore, record: KeyRecord, *, unindex: Iterable[str] = ()) -> None:
    """Write ``record``; index its live secret hashes, and drop the index entries ``unindex``."""
    await store.save(record.id, record, index=live_hashes(record), unindex=unindex)


def _unavailable() -> KeyStoreUnavailable:
    return KeyStoreUnavailable(
        "the key store (Redis) is unreachable: stored keys cannot be checked or changed now; retry shortly"
    )


def open_key_store(redis: BoundedRedis | None) -> KeyStore:
    """No Redis: this edge's memory; else shared by every edge on that Redis."""
    if redis is None:
        return MemoryRecords[KeyRecord]()
    return RedisRecords(redis, namespace=NAMESPACE, record_type=KeyRecord, unavailable=_unavailable)


__all__ = ["KeyRecord", "KeyStore", "live_hashes", "open_key_store", "save_key"]
