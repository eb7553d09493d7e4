"""Usage per key, what billing would be built on: turns, audio seconds in and out, tokens.

Each finished turn adds a ``UsageDelta`` twice: to this edge's Prometheus counters (``/metrics``,
labelled by key id: ``voicemesh_edge_key_*``) and to the key's shared totals, read by an admin at
``GET /v1/keys/{key_id}/usage`` on any edge. The totals live behind ``UsageTotals``:
``MemoryUsageTotals`` (one edge) or ``RedisUsageTotals`` (a Redis hash per key, ``HINCRBYFLOAT``:
every edge adds to it atomically; while Redis fails, this edge counts in memory, adds that in when
read, and adds it to the shared hash once Redis answers: ``share_held``).

What is counted: audio in is the user audio a region was sent (16 kHz PCM16); audio out is the
region audio relayed to the client (24 kHz PCM16; the edge's own fallback voice is not counted:
no region worked for it); tokens are ``response.usage``'s (``edge/responses/response_frames.py``: regions
report none, so they are the edge's estimate from text length); a turn is a response, or a
transcription turn of its own.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from edge.shared.metrics import KEY_AUDIO_SECONDS, KEY_TOKENS, KEY_TURNS
from edge.tenancy.audit import BoundedRedis

PCM16K_BYTES_PER_S = 32_000
"""User audio as regions get it."""
PCM24K_BYTES_PER_S = 48_000
"""Region audio as the edge relays it."""


class UsageDelta(msgspec.Struct, frozen=True, kw_only=True):
    turns: int = 1
    audio_in_s: float = 0.0
    audio_out_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0

    @classmethod
    def of(cls, *, audio_in_bytes: int, audio_out_bytes: int, tokens: tuple[int, int] = (0, 0)) -> UsageDelta:
        return cls(
            audio_in_s=audio_in_bytes / PCM16K_BYTES_PER_S,
            audio_out_s=audio_out_bytes / PCM24K_BYTES_PER_S,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
        )

    def fields(self) -> dict[str, float]:
        return {k: float(v) for k, v in msgspec.structs.asdict(self).items()}


FIELDS = tuple(UsageDelta.__struct_fields__)


def count(key_id: str, outcome: str, delta: UsageDelta) -> None:
    """This edge's Prometheus counters."""
    KEY_TURNS.labels(key_id, outcome).inc(delta.turns)
    KEY_AUDIO_SECONDS.labels(key_id, "in").inc(delta.audio_in_s)
    KEY_AUDIO_SECONDS.labels(key_id, "out").inc(delta.audio_out_s)
    KEY_TOKENS.labels(key_id, "input").inc(delta.input_tokens)
    KEY_TOKENS.labels(key_id, "output").inc(delta.output_tokens)


class UsageTotals(Protocol):
    async def add(self, key_id: str, delta: UsageDelta) -> None: ...

    async def totals(self, key_id: str) -> dict[str, float]:
        """Every field of ``UsageDelta``, summed over the key's turns (zeros for an unknown key)."""
        ...

    async def share_held(self) -> bool:
        """Add what was counted on this edge while the shared store failed; True once none is held."""
        ...


class MemoryUsageTotals:
    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, float]] = {}

    async def add(self, key_id: str, delta: UsageDelta) -> None:
        self.merge({key_id: delta.fields()})

    async def totals(self, key_id: str) -> dict[str, float]:
        return dict(self._by_key.get(key_id, dict.fromkeys(FIELDS, 0.0)))

    async def share_held(self) -> bool:
        return True

    def merge(self, by_key: dict[str, dict[str, float]]) -> None:
        for key_id, fields in by_key.items():
            totals = self._by_key.setdefault(key_id, dict.fromkeys(FIELDS, 0.0))
            for name, value in fields.items():
                totals[name] += value

    def take_all(self) -> dict[str, dict[str, float]]:
        """Every key's totals, removed from here."""
        by_key, self._by_key = self._by_key, {}
        return by_key


class RedisUsageTotals:
    """One hash per key (``voicemesh-usage:<key_id>``), added to by every edge; no expiry."""

    def __init__(self, redis: BoundedRedis) -> None:
        self._redis = redis
        self._held = MemoryUsageTotals()
        """Counted while Redis failed, until ``share_held`` adds it to the shared hashes."""

    @staticmethod
    def _key(key_id: str) -> str:
        return f"voicemesh-usage:{key_id}"

    async def add(self, key_id: str, delta: UsageDelta) -> None:
        if not await self._incr({key_id: delta.fields()}):
            await self._held.add(key_id, delta)

    async def share_held(self) -> bool:
        held = self._held.take_all()
        if held and not await self._incr(held):
            self._held.merge(held)
            return False
        return True

    async def _incr(self, by_key: dict[str, dict[str, float]]) -> bool:
        async def incr() -> object:
            pipe = self._redis.client.pipeline(transaction=True)  # all of it or none
            for key_id, fields in by_key.items():
                for name, value in fields.items():
                    pipe.hincrbyfloat(self._key(key_id), name, value)
            return await pipe.execute()

        ok, _ = await self._redis.call(incr)
        return ok

    async def totals(self, key_id: str) -> dict[str, float]:
        ok, raw = await self._redis.call(lambda: self._redis.client.hgetall(self._key(key_id)))
        local = await self._held.totals(key_id)
        shared = {k.decode(): float(v) for k, v in (raw or {}).items()} if ok else {}
        return {name: round(shared.get(name, 0.0) + local[name], 3) for name in FIELDS}


__all__ = ["MemoryUsageTotals", "RedisUsageTotals", "UsageDelta", "UsageTotals", "count"]
