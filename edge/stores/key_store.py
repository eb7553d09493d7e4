"""Where stored API keys live: one record per key, and an index from a secret's SHA-256 to its key.

A ``KeyStore`` is a small Protocol with two backends: ``MemoryKeyStore`` (one edge, lost when it
stops) and ``RedisKeyStore`` (shared by every edge: a key made through one is known to all). The
Litestar ``Store`` the edge uses for sessions cannot list its keys, and keys need listing; so keys
have their own two Redis hashes (``voicemesh-keys:records`` id -> record, ``voicemesh-keys:hashes``
secret SHA-256 -> id). A secret itself is never stored.

Redis is not replaced by a local copy while it is down (unlike ``edge/stores/shared_store.py``): a key
made or revoked during an outage would differ between edges. Calls raise ``KeyStoreUnavailable``
(HTTP 503), and ``edge/tenancy/keys.py`` decides what an edge may still trust meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from edge.shared.errors import KeyStoreUnavailable
from edge.shared.key_policy import KeyPolicy, policy_from_claims
from wire.redact import redact_url

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


class KeyStore(Protocol):
    async def save(self, record: KeyRecord, *, unindex: Iterable[str] = ()) -> None:
        """Write ``record``; index its live secret hashes, and drop the index entries ``unindex``."""

    async def get(self, key_id: str) -> KeyRecord | None: ...

    async def get_many(self, key_ids: Iterable[str]) -> dict[str, KeyRecord]:
        """The records of those ids that exist (one round trip)."""

    async def find(self, secret_sha256: str) -> KeyRecord | None:
        """The key a secret hash is indexed under (the caller still checks ``accepts``)."""

    async def all(self) -> list[KeyRecord]: ...

    def status(self) -> dict[str, object]: ...

    async def aclose(self) -> None: ...


def _live_hashes(record: KeyRecord) -> list[str]:
    if record.revoked_at is not None:
        return []
    return [h for h in (record.secret_sha256, record.previous_sha256) if h]


class MemoryKeyStore:
    """This edge only: keys made here are known here (a single edge without Redis)."""

    def __init__(self) -> None:
        self._records: dict[str, KeyRecord] = {}
        self._hashes: dict[str, str] = {}

    async def save(self, record: KeyRecord, *, unindex: Iterable[str] = ()) -> None:
        self._records[record.id] = record
        for digest in unindex:
            self._hashes.pop(digest, None)
        self._hashes.update(dict.fromkeys(_live_hashes(record), record.id))

    async def get(self, key_id: str) -> KeyRecord | None:
        return self._records.get(key_id)

    async def get_many(self, key_ids: Iterable[str]) -> dict[str, KeyRecord]:
        return {i: r for i in key_ids if (r := self._records.get(i)) is not None}

    async def find(self, secret_sha256: str) -> KeyRecord | None:
        key_id = self._hashes.get(secret_sha256)
        return None if key_id is None else self._records.get(key_id)

    async def all(self) -> list[KeyRecord]:
        return list(self._records.values())

    def status(self) -> dict[str, object]:
        return {"backend": "memory", "reachable": True}

    async def aclose(self) -> None:
        pass


# One round trip for the handshake's lookup: hash -> id -> record.
_FIND = """
local id = redis.call('HGET', KEYS[2], ARGV[1])
if not id then return false end
return redis.call('HGET', KEYS[1], id)
"""


def redis_client(url: str, timeout_s: float) -> aioredis.Redis[bytes]:
    """A client that never stalls an edge: connect and read bounded, no retries (as
    ``edge/stores/shared_store.py`` builds its own)."""
    return aioredis.Redis.from_url(
        url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
    )


class RedisKeyStore:
    """Every edge's keys in Redis; a call that fails raises ``KeyStoreUnavailable``."""

    def __init__(self, url: str, *, timeout_s: float = 0.5) -> None:
        self._url = url
        self._timeout_s = timeout_s
        self._client = redis_client(url, timeout_s)
        self._records = f"{NAMESPACE}:records"
        self._hashes = f"{NAMESPACE}:hashes"
        self._find = self._client.register_script(_FIND)
        self._decoder = msgspec.json.Decoder(KeyRecord)
        self.last_error = ""

    def _decode(self, raw: object) -> KeyRecord | None:
        return self._decoder.decode(raw) if isinstance(raw, bytes) else None

    async def _call(self, op: Any) -> Any:
        try:
            async with asyncio.timeout(2 * self._timeout_s + 0.1):  # the whole call, not each step
                result = await op
        except (RedisError, OSError, TimeoutError) as exc:
            self.last_error = type(exc).__name__  # redis-py's text may carry the host
            raise KeyStoreUnavailable(
                "the key store (Redis) is unreachable: stored keys cannot be checked or changed now; "
                "retry shortly"
            ) from exc
        self.last_error = ""
        return result

    async def save(self, record: KeyRecord, *, unindex: Iterable[str] = ()) -> None:
        pipe = self._client.pipeline(transaction=True)  # record and index change together
        pipe.hset(self._records, record.id, msgspec.json.encode(record))
        if stale := [d for d in unindex if d not in _live_hashes(record)]:
            pipe.hdel(self._hashes, *stale)
        if live := _live_hashes(record):
            pipe.hset(self._hashes, mapping=dict.fromkeys(live, record.id))
        await self._call(pipe.execute())

    async def get(self, key_id: str) -> KeyRecord | None:
        return self._decode(await self._call(self._client.hget(self._records, key_id)))

    async def get_many(self, key_ids: Iterable[str]) -> dict[str, KeyRecord]:
        ids = list(key_ids)
        if not ids:
            return {}
        raws = await self._call(self._client.hmget(self._records, ids))
        return {i: r for i, raw in zip(ids, raws, strict=True) if (r := self._decode(raw)) is not None}

    async def find(self, secret_sha256: str) -> KeyRecord | None:
        raw = await self._call(self._find(keys=[self._records, self._hashes], args=[secret_sha256]))
        return self._decode(raw)

    async def all(self) -> list[KeyRecord]:
        raws = await self._call(self._client.hvals(self._records))
        return [r for raw in raws if (r := self._decode(raw)) is not None]

    def status(self) -> dict[str, object]:
        return {"backend": "redis", "url": redact_url(self._url), "error": self.last_error}

    async def aclose(self) -> None:
        await self._client.aclose()  # type: ignore[attr-defined]  # types-redis 4.6 predates aclose


def open_key_store(url: str | None, *, timeout_s: float = 0.5) -> KeyStore:
    """``None`` -> this edge's memory; ``redis://...`` -> shared by every edge on that Redis."""
    return MemoryKeyStore() if url is None else RedisKeyStore(url, timeout_s=timeout_s)


__all__ = [
    "KeyRecord",
    "KeyStore",
    "MemoryKeyStore",
    "RedisKeyStore",
    "open_key_store",
    "redis_client",
]
