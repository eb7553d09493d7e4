"""API keys as data: made, listed, rotated and revoked through any edge's admin API
(``edge/tenancy/key_routes.py``, ``voicemesh keys``), and checked at every handshake (``docs/keys.md``).

A key's secret is ``vm_`` plus 32 random bytes (URL-safe), shown once when the key is made or
rotated; the store (``edge/tenancy/key_record.py``) keeps only its SHA-256. Each key carries a ``KeyPolicy``
(residency, session cap, rate and burst, voices, priority class) that every credential of the key
brings along: the key itself, and the client secrets minted from it.

No edge needs a restart to learn about a key: a handshake looks the secret's hash up in the shared
store. An edge may trust what it looked up for ``KeySettings.cache_s`` (so a busy key does not cost
a Redis call per connect), which bounds how long a revoked or rotated secret still opens sessions on
another edge. Sessions already open are checked by ``RevocationWatch``, one task per edge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from edge.shared.errors import BadKeyRequest, KeyNotFound, KeyStoreUnavailable, VoiceRefused
from edge.shared.json_body import json_object
from edge.shared.key_policy import InvalidPolicy, policy_from_claims
from edge.shared.settings import KeySettings
from edge.shared.voices import VoiceTable
from edge.tenancy.client_secrets import digest
from edge.tenancy.key_record import KeyRecord, KeyStore, save_key

log = logging.getLogger("voicemesh.edge.keys")

SECRET_PREFIX = "vm_"
MAX_NAME_CHARS = 64
MAX_GRACE_S = 7 * 86_400
POLICY_FIELDS = ("residency", "max_sessions", "rate_per_s", "burst", "voices", "priority", "on_no_region")
_CACHE_ENTRIES = 10_000
"""Most secrets one edge remembers at once (the cache is cleared past it: a bound, not an LRU)."""


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def _body(raw: bytes) -> dict[str, Any]:
    return json_object(raw, BadKeyRequest)


def parse_new_key(raw: bytes, voices: VoiceTable) -> tuple[str, dict[str, object]]:
    """``(name, policy fields)`` of ``POST /v1/keys``: ``name`` and the ``KeyPolicy`` fields, each
    checked (a voice the edge cannot speak is refused now, not at a session's first turn)."""
    body = _body(raw)
    unknown = sorted(set(body) - {"name", *POLICY_FIELDS})
    if unknown:
        raise BadKeyRequest(
            f"unknown field(s) {', '.join(unknown)}: accepted are name, {', '.join(POLICY_FIELDS)}"
        )
    name = body.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        raise BadKeyRequest(f"`name` must be a non-empty string of at most {MAX_NAME_CHARS} characters")
    fields = {f: body[f] for f in POLICY_FIELDS if body.get(f) is not None}
    try:
        policy = policy_from_claims(fields)
    except InvalidPolicy as exc:
        raise BadKeyRequest(str(exc)) from exc
    for voice in sorted(policy.voices or ()):
        if voice.startswith("voice_"):
            continue  # a custom voice's id (``edge/speech/custom_voices.py``): it may be made later
        try:
            voices.region_voice(voice, param="voices")
        except VoiceRefused as exc:
            raise BadKeyRequest(f"`voices`: {exc.message}") from exc
    # Stored as the policy parsed them (a comma string of residencies becomes a list).
    fields.update(
        residency=sorted(policy.residency) if policy.residency else None,
        voices=sorted(policy.voices) if policy.voices else None,
        max_sessions=policy.max_sessions, rate_per_s=policy.rate_per_s, burst=policy.burst,
        priority=policy.priority, on_no_region=policy.on_no_region,
    )  # fmt: skip
    return name.strip(), fields


def parse_grace(raw: bytes) -> float:
    """``grace_s`` of ``POST /v1/keys/{id}/rotate``: how long the old secret keeps working (0: not at all)."""
    grace = _body(raw).get("grace_s", 0)
    if isinstance(grace, bool) or not isinstance(grace, int | float) or not 0 <= grace <= MAX_GRACE_S:
        raise BadKeyRequest(f"`grace_s` must be a number of seconds in [0, {MAX_GRACE_S}]")
    return float(grace)


@dataclass(frozen=True, slots=True)
class _Cached:
    record: KeyRecord
    at: float


class KeyRing:
    """The edge's stored keys: the admin operations, and the handshake's lookup (cached for at most
    ``settings.cache_s``)."""

    def __init__(
        self, store: KeyStore, settings: KeySettings, voices: VoiceTable,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.store = store
        self.settings = settings
        self._voices = voices
        self._clock = clock
        self._by_hash: dict[str, _Cached] = {}
        self._by_id: dict[str, _Cached] = {}
        self.watch = RevocationWatch(self, interval_s=settings.revocation_check_s)

    # -- admin -------------------------------------------------------------------------------------

    async def create(self, raw: bytes) -> tuple[KeyRecord, str]:
        """A new key from a ``POST /v1/keys`` body; returns it and its secret (shown this once)."""
        name, fields = parse_new_key(raw, self._voices)
        secret = new_secret()
        record = msgspec.convert(
            {"id": "key_" + secrets.token_hex(8), "name": name, "secret_sha256": digest(secret),
             "created_at": time.time(), **fields},
            KeyRecord,
        )  # fmt: skip
        await save_key(self.store, record)
        log.info("key %s (%s) created", record.id, name)
        return record, secret

    async def get(self, key_id: str) -> KeyRecord:
        record = await self.store.get(key_id) if len(key_id) <= 64 else None
        if record is None:
            raise KeyNotFound(f"no key with id {key_id[:64]!r}: `voicemesh keys list` shows them")
        return record

    async def all(self) -> list[KeyRecord]:
        return sorted(await self.store.all(), key=lambda r: r.created_at)

    async def rotate(self, key_id: str, raw: bytes) -> tuple[KeyRecord, str]:
        """A new secret for the key; the old one stops working at once, or after ``grace_s``."""
        grace = parse_grace(raw)
        record = await self.get(key_id)
        if record.revoked_at is not None:
            raise BadKeyRequest(f"key {key_id} is revoked: create a new key instead", code="api_key_revoked")
        secret, now = new_secret(), time.time()
        dropped = [h for h in (record.previous_sha256,) if h]
        rotated = msgspec.structs.replace(
            record, secret_sha256=digest(secret), rotated_at=now,
            previous_sha256=record.secret_sha256 if grace > 0 else None,
            previous_until=now + grace if grace > 0 else None,
        )  # fmt: skip
        if grace <= 0:
            dropped.append(record.secret_sha256)
        await save_key(self.store, rotated, unindex=dropped)
        self._forget(record)
        log.info("key %s rotated (old secret valid for %g s more)", key_id, grace)
        return rotated, secret

    async def revoke(self, key_id: str) -> KeyRecord:
        """The key stops working: new handshakes are refused and its open sessions end."""
        record = await self.get(key_id)
        if record.revoked_at is not None:
            return record  # revoking twice is not an error: the outcome is the same
        revoked = msgspec.structs.replace(record, revoked_at=time.time())
        await save_key(
            self.store, revoked, unindex=[h for h in (record.secret_sha256, record.previous_sha256) if h]
        )
        self._forget(record)
        log.info("key %s revoked", key_id)
        return revoked

    def _forget(self, record: KeyRecord) -> None:
        """This edge stops trusting what it cached of the key at once (other edges after ``cache_s``)."""
        self._by_id.pop(record.id, None)
        for h in (record.secret_sha256, record.previous_sha256):
            if h:
                self._by_hash.pop(h, None)

    # -- handshake ---------------------------------------------------------------------------------

    def _fresh(self, entry: _Cached | None) -> bool:
        return entry is not None and self._clock() - entry.at < self.settings.cache_s

    async def _cached(
        self, cache: dict[str, _Cached], name: str, fetch: Callable[[], Awaitable[KeyRecord | None]]
    ) -> KeyRecord | None:
        """``fetch()``'s record, or what ``cache`` holds under ``name`` while it is fresh. While the
        store is unreachable a key this edge has seen is still trusted, however old its entry (no
        edge can learn of a revocation then either); one it has not seen raises
        ``KeyStoreUnavailable``."""
        cached = cache.get(name)
        if self._fresh(cached):
            assert cached is not None
            return cached.record
        try:
            record = await fetch()
        except KeyStoreUnavailable:
            if cached is None:
                raise
            return cached.record
        if record is None:
            cache.pop(name, None)
            return None
        if len(cache) >= _CACHE_ENTRIES:
            cache.clear()
        cache[name] = _Cached(record, self._clock())
        return record

    async def authenticate(self, secret: str) -> KeyRecord | None:
        """The live key whose secret this is, else ``None`` (unknown, revoked, rotated away)."""
        hashed = digest(secret)
        record = await self._cached(self._by_hash, hashed, lambda: self.store.find(hashed))
        return record if record is not None and record.accepts(hashed) else None

    async def live(self, key_id: str) -> KeyRecord | None:
        """The key by id if it exists and is not revoked (what a client secret minted from it
        needs at its handshake); cached like ``authenticate``."""
        record = await self._cached(self._by_id, key_id, lambda: self.store.get(key_id))
        return record if record is not None and record.revoked_at is None else None

    async def revoked(self, key_ids: Iterable[str]) -> set[str]:
        """Which of these stored keys are revoked (or gone), straight from the store."""
        ids = set(key_ids)
        found = await self.store.get_many(ids)
        return {i for i in ids if i not in found or found[i].revoked_at is not None}

    async def aclose(self) -> None:
        await self.watch.aclose()
        await self.store.aclose()


OnRevoked = Callable[[], Awaitable[None]]


class RevocationWatch:
    """Ends the open sessions of revoked keys: one task per edge, which every ``interval_s`` reads
    the records of the stored keys that have sessions here (one Redis call for all of them) and
    calls each revoked key's sessions' ``on_revoked``. It runs only while there is a session to
    watch."""

    def __init__(self, ring: KeyRing, *, interval_s: float) -> None:
        self._ring = ring
        self._interval_s = interval_s
        self._sessions: dict[str, dict[int, OnRevoked]] = {}
        self._task: asyncio.Task[None] | None = None
        self._next = 0

    def add(self, key_id: str, on_revoked: OnRevoked) -> Callable[[], None]:
        """Watch one session of ``key_id``; returns what stops watching it (call it at the end)."""
        self._next += 1
        token = self._next
        self._sessions.setdefault(key_id, {})[token] = on_revoked
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="key-revocation-watch")

        def remove() -> None:
            sessions = self._sessions.get(key_id)
            if sessions is not None:
                sessions.pop(token, None)
                if not sessions:
                    del self._sessions[key_id]

        return remove

    async def _run(self) -> None:
        while self._sessions:
            await asyncio.sleep(self._interval_s)
            try:
                revoked = await self._ring.revoked(list(self._sessions))
            except KeyStoreUnavailable:
                continue  # nobody can revoke a key while the store is down either
            ended = [cb for key_id in revoked for cb in self._sessions.pop(key_id, {}).values()]
            if ended:
                # Each one sends an event and closes a socket: bounded, so one stuck client cannot
                # hold up the others (or the next check).
                await asyncio.gather(*(asyncio.wait_for(cb(), 5.0) for cb in ended), return_exceptions=True)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task


__all__ = [
    "SECRET_PREFIX",
    "KeyRing",
    "RevocationWatch",
    "new_secret",
    "parse_grace",
    "parse_new_key",
]
