"""The speech cache: a repeated ``POST /v1/audio/speech`` served from the shared store, no synthesis.

An entry is the encoded audio of one complete answer, keyed by what decides the sound: the text,
the voice (a region voice's name, or a custom voice's content digest, so editing a definition never
serves stale audio), the format, the speed, and the key's residency set (audio made by a region a
key may not use is never served to it: each residency set has its own entries). Only complete,
region-served results are stored: never the edge's fallback voice, never an answer cut short.
Entries live in the edge's store (Redis shared by every edge, with its local fallback), bounded by
``SpeechCacheSettings``: a size cap per entry and a TTL.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass

import msgspec
from prometheus_client import Counter

from edge.shared.settings import SpeechCacheSettings
from edge.stores.base import EdgeStore

log = logging.getLogger(__name__)

LOOKUPS = Counter(
    "voicemesh_edge_speech_cache_lookups_total",
    "Speech requests looked up in the speech cache, by result (`hit`, `miss`): the hit ratio is"
    " hit / (hit + miss)",
    ["result"],
)
STORED = Counter("voicemesh_edge_speech_cache_stored_total", "Speech results written to the speech cache")


class CachedSpeech(msgspec.Struct, kw_only=True):
    audio: bytes
    """The encoded audio, whole, in the request's ``response_format``."""
    regions: list[str]
    """The regions that made it (the ``x-voicemesh-region`` of a hit is the first)."""
    pcm_bytes: int = 0
    """Its length as 24 kHz PCM16 (what a hit books as audio out)."""


@dataclass(frozen=True)
class SpeechKey:
    text: str
    voice: str
    """A region voice's name, or ``custom:<digest>`` of a custom voice's definition."""
    response_format: str
    speed: float
    residency: frozenset[str] | None

    def digest(self) -> str:
        residency = None if self.residency is None else sorted(self.residency)
        fields = [self.text, self.voice, self.response_format, repr(float(self.speed)), residency]
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


class SpeechCache:
    def __init__(self, store: EdgeStore, settings: SpeechCacheSettings) -> None:
        self._store = store
        self.settings = settings
        self._decoder = msgspec.msgpack.Decoder(CachedSpeech)

    @staticmethod
    def _key(key: SpeechKey) -> str:
        return f"speech-cache:{key.digest()}"

    async def get(self, key: SpeechKey) -> CachedSpeech | None:
        """The stored result, or ``None`` (also when disabled); counts a hit or a miss."""
        if not self.settings.enabled:
            return None
        raw = await self._store.get(self._key(key))
        found = None
        if raw is not None:
            try:
                found = self._decoder.decode(raw)
            except msgspec.DecodeError:
                log.warning("speech cache: an unreadable entry is ignored")
        LOOKUPS.labels("hit" if found is not None else "miss").inc()
        return found

    async def put(self, key: SpeechKey, audio: bytes, regions: list[str], *, pcm_bytes: int = 0) -> bool:
        """Store a complete, region-served result; ``False`` when disabled or over the size cap."""
        if not self.settings.enabled or not audio or len(audio) > self.settings.max_entry_bytes:
            return False
        entry = msgspec.msgpack.encode(CachedSpeech(audio=audio, regions=regions, pcm_bytes=pcm_bytes))
        await self._store.set(self._key(key), entry, expires_in=self.settings.ttl_s)
        STORED.inc()
        return True


__all__ = ["CachedSpeech", "SpeechCache", "SpeechKey"]
