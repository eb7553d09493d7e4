"""Usage per key, what billing would be built on: turns, audio seconds in and out, tokens.

Each finished turn adds a ``UsageDelta`` twice: to this edge's Prometheus counters (``/metrics``,
``voicemesh_edge_key_*``, labelled by a key id that reveals nothing of the key) and to the key's
shared totals, read by an admin at ``GET /v1/keys/{key_id}/usage`` on any edge. The totals live
in ``Counters`` (``edge/stores/``): this edge's memory, or a Redis hash per key that every edge adds
to atomically; while Redis fails, this edge counts in memory, adds that in when read, and adds it
to the shared hash once Redis answers).

What is counted: audio in is the user audio a region was sent (16 kHz PCM16); audio out is the
region audio relayed to the client (24 kHz PCM16; the edge's own fallback voice is not counted:
no region worked for it); tokens are ``response.usage``'s (``edge/responses/response_frames.py``: regions
report none, so they are the edge's estimate from text length); a turn is a response, or a
transcription turn of its own.
"""

from __future__ import annotations

import msgspec

from edge.shared.metrics import KEY_AUDIO_SECONDS, KEY_TOKENS, KEY_TURNS, key_label
from edge.stores.base import Counters
from edge.stores.memory import MemoryCounters
from edge.stores.redis.counters import RedisCounters
from wire.bounded_redis import BoundedRedis

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
    """This edge's Prometheus counters, under the key's label (``key_label``: nothing of the key)."""
    key_id = key_label(key_id)
    KEY_TURNS.labels(key_id, outcome).inc(delta.turns)
    KEY_AUDIO_SECONDS.labels(key_id, "in").inc(delta.audio_in_s)
    KEY_AUDIO_SECONDS.labels(key_id, "out").inc(delta.audio_out_s)
    KEY_TOKENS.labels(key_id, "input").inc(delta.input_tokens)
    KEY_TOKENS.labels(key_id, "output").inc(delta.output_tokens)


class UsageTotals:
    """A key's usage, summed in ``Counters`` of the edge's stores (``edge/stores/``): this edge's
    memory, or a hash per key in Redis (``voicemesh-usage:<key_id>``, no expiry)."""

    def __init__(self, counters: Counters) -> None:
        self.counters = counters

    async def add(self, key_id: str, delta: UsageDelta) -> None:
        await self.counters.add(key_id, delta.fields())

    async def totals(self, key_id: str) -> dict[str, float]:
        """Every field of ``UsageDelta``, summed over the key's turns (zeros for an unknown key)."""
        summed = await self.counters.totals(key_id)
        return {name: round(summed.get(name, 0.0), 3) for name in FIELDS}

    async def share_held(self) -> bool:
        """Add what was counted on this edge while the shared store failed; True once none is held."""
        return await self.counters.share_held()


def open_usage(redis: BoundedRedis | None) -> UsageTotals:
    return UsageTotals(MemoryCounters() if redis is None else RedisCounters(redis, prefix="voicemesh-usage:"))


__all__ = ["UsageDelta", "UsageTotals", "count", "open_usage"]
