"""Conversation state kept at the edge (regions are stateless), in a pluggable store.

The store is Litestar's own ``Store`` (``MemoryStore`` in one process, ``RedisStore`` shared by
several edges, which also keeps the client secrets any of them minted). A session's state is saved
after each settings change and each turn, and removed when its connection closes.
"""

from __future__ import annotations

import msgspec
from litestar.stores.base import Store
from litestar.stores.memory import MemoryStore
from litestar.stores.redis import RedisStore

from wire.turn import Message


class TurnDetection(msgspec.Struct, kw_only=True):
    threshold: float
    prefix_padding_ms: int
    silence_duration_ms: int
    create_response: bool = True
    interrupt_response: bool = True


class SessionState(msgspec.Struct, kw_only=True):
    id: str
    key_id: str
    model: str = ""
    voice: str = ""
    instructions: str = ""
    turn_detection: TurnDetection | None = None
    output_modalities: list[str] = msgspec.field(default_factory=lambda: ["audio"])
    max_output_tokens: int = 200
    temperature: float = 0.7
    history: list[Message] = msgspec.field(default_factory=list)
    created_at: float = 0.0


def open_store(url: str | None) -> Store:
    """``None`` -> an in-process store; ``redis://...`` -> Redis."""
    if url is None:
        return MemoryStore()
    return RedisStore.with_client(url=url, namespace="voicemesh-edge")


class SessionStore:
    """Sessions by id, serialised with msgspec, expiring after ``ttl_s`` without a save."""

    def __init__(self, store: Store, *, ttl_s: int = 3600) -> None:
        self._store = store
        self._ttl_s = ttl_s
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(SessionState)

    async def save(self, state: SessionState) -> None:
        await self._store.set(f"session:{state.id}", self._encoder.encode(state), expires_in=self._ttl_s)

    async def load(self, session_id: str) -> SessionState | None:
        raw = await self._store.get(f"session:{session_id}")
        return None if raw is None else self._decoder.decode(raw)

    async def delete(self, session_id: str) -> None:
        await self._store.delete(f"session:{session_id}")
