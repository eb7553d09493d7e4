"""Custom voices (``POST /v1/voices``): named blends of the regions' Kokoro styles, or uploaded
style vectors, kept once in the shared store and spoken by every region.

Who sees what (``docs/speech.md``, "Custom voices"): a voice belongs to the key that made it and is
visible and usable by that key only; an admin key may make a voice ``shared``, visible and usable
by every key. A key deletes its own voices; an admin deletes any. A key whose policy restricts its
voices (``KeyPolicy.voices``) may blend only voices it may use, may not upload a style, and may
use a shared voice only when its id or name is in its list, or when it blends only allowed voices.

Regions keep nothing: the edge puts the voice's definition (``wire.voices.CustomVoice``) into every
turn that speaks with it, so a region started after the voice was made, or one a turn fails over
to, speaks it the same. Records live in the edge's ``Records`` store (``edge/stores/``; in Redis a
hash ``voicemesh-voices:records``, id -> record), like stored keys: an unreachable Redis is a 503,
never a local copy that would differ between edges.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from typing import Any

import msgspec

from edge.shared.errors import InvalidParam, VoiceNotFound, VoiceRefused, VoiceStoreUnavailable
from edge.shared.json_body import typed_body
from edge.shared.voices import VoiceTable
from edge.stores.base import Records
from edge.stores.memory import MemoryRecords
from edge.stores.redis.records import RedisRecords
from edge.tenancy.auth import ADMIN, Principal
from wire.bounded_redis import BoundedRedis
from wire.errors import BadEvent
from wire.voices import CustomVoice, check_blend, decode_style

NAMESPACE = "voicemesh-voices"
MAX_VOICES_PER_KEY = 100
"""A key's own voices: a bound on what one tenant can store (an uploaded style is ~0.7 MB)."""
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class VoiceRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    name: str
    owner: str
    """The key id that made it."""
    shared: bool = False
    created_at: float
    blend: dict[str, float] = msgspec.field(default_factory=dict)
    style: str = ""

    def definition(self) -> CustomVoice:
        return CustomVoice(id=self.id, blend=self.blend, style=self.style)

    def public(self) -> dict[str, Any]:
        """What the API shows: never the style itself (it is large), only that there is one."""
        return {
            "id": self.id, "object": "voice", "name": self.name, "owner": self.owner,
            "shared": self.shared, "created_at": int(self.created_at),
            "kind": "blend" if self.blend else "style",
            **({"blend": self.blend} if self.blend else {}),
        }  # fmt: skip

    def visible_to(self, principal: Principal) -> bool:
        return self.shared or self.owner == principal.key_id or ADMIN in principal.scopes


VoiceStore = Records[VoiceRecord]


def _unavailable() -> VoiceStoreUnavailable:
    return VoiceStoreUnavailable("the voice store (Redis) is unreachable: retry shortly")


def open_voice_store(redis: BoundedRedis | None) -> VoiceStore:
    """No Redis: this edge's memory; else one Redis hash shared by every edge."""
    if redis is None:
        return MemoryRecords[VoiceRecord]()
    return RedisRecords(redis, namespace=NAMESPACE, record_type=VoiceRecord, unavailable=_unavailable)


class NewVoice(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``POST /v1/voices``' body: ``name`` and exactly one of ``blend`` and ``style``."""

    name: str
    blend: dict[str, float] | None = None
    style: str | None = None
    """Base64 of float32 little-endian values, Kokoro's style shape (510, 1, 256)."""
    shared: bool = False


def _allowed(name: str, voices: frozenset[str] | None, table: VoiceTable) -> bool:
    """Whether a key restricted to ``voices`` may use the built-in voice ``name`` (by its name or
    the region voice it maps to)."""
    if voices is None:
        return True
    return name in voices or any(
        table.region_voice(v, param="voices") == name for v in voices if v in table.names()
    )


def parse_new_voice(raw: bytes, principal: Principal, table: VoiceTable) -> NewVoice:
    """A checked ``NewVoice``: its blend in region voice names, weights scaled to sum to 1.
    Raises ``InvalidParam`` (400 naming the field) or ``Forbidden`` (403: ``shared`` needs admin)."""
    new = typed_body(raw, NewVoice)
    if not _NAME.match(new.name):
        raise InvalidParam("name must be 1 to 64 letters, digits, '_', '-' or '.'", param="name")
    if new.name in table.names():
        raise InvalidParam(f"name '{new.name}' is a built-in voice: choose another", param="name")
    if (new.blend is None) == (new.style is None):
        raise InvalidParam("give exactly one of `blend` (voice -> weight) and `style`", param="blend")
    if new.shared:
        principal.require(ADMIN)
    restricted = principal.policy.voices
    if new.blend is not None:
        merged: dict[str, float] = {}
        for name, weight in new.blend.items():
            voice = table.region_voice(name, param="blend") if name else ""
            if not voice:
                raise InvalidParam("a blend names voices: an empty name is not one", param="blend")
            if not _allowed(voice, restricted, table):
                raise InvalidParam(
                    f"voice '{name}' is not allowed for this API key", param="blend", code="voice_not_allowed"
                )
            merged[voice] = merged.get(voice, 0.0) + weight
        try:
            new.blend = check_blend(merged)
        except BadEvent as exc:
            raise InvalidParam(exc.message, param="blend") from exc
    else:
        assert new.style is not None
        if restricted is not None:
            raise InvalidParam(
                "this API key is restricted to some voices: it may blend them, not upload a style",
                param="style", code="voice_not_allowed",
            )  # fmt: skip
        try:
            decode_style(new.style)
        except BadEvent as exc:
            raise InvalidParam(exc.message, param="style") from exc
    return new


class VoiceLibrary:
    """The custom voices every edge shares, and who may see and use which."""

    def __init__(self, store: VoiceStore, table: VoiceTable) -> None:
        self.store = store
        self.table = table

    async def create(self, raw: bytes, principal: Principal) -> VoiceRecord:
        new = parse_new_voice(raw, principal, self.table)
        records = await self.store.all()
        mine = [r for r in records if r.owner == principal.key_id]
        if len(mine) >= MAX_VOICES_PER_KEY:
            raise InvalidParam(f"this key has {MAX_VOICES_PER_KEY} voices: delete one first", param="name")
        # A name must say one voice to whoever can use it: unique among the owner's and the shared ones.
        if any(r.name == new.name and (r.owner == principal.key_id or r.shared) for r in records):
            raise InvalidParam(
                f"a voice named '{new.name}' exists already", param="name", code="voice_name_taken"
            )
        record = VoiceRecord(
            id=f"voice_{secrets.token_hex(12)}", name=new.name, owner=principal.key_id, shared=new.shared,
            created_at=time.time(), blend=new.blend or {}, style=new.style or "",
        )  # fmt: skip
        await self.store.save(record.id, record)
        return record

    async def visible(self, principal: Principal) -> list[VoiceRecord]:
        records = [r for r in await self.store.all() if r.visible_to(principal)]
        return sorted(records, key=lambda r: r.created_at)

    async def get(self, voice_id: str, principal: Principal) -> VoiceRecord:
        record = await self.store.get(voice_id) if voice_id.startswith("voice_") else None
        if record is None or not record.visible_to(principal):
            raise VoiceNotFound(f"no voice '{voice_id}'")
        return record

    async def delete(self, voice_id: str, principal: Principal) -> VoiceRecord:
        record = await self.get(voice_id, principal)
        if record.owner != principal.key_id:
            principal.require(ADMIN)  # a shared voice is deleted by an admin, not by its users
        await self.store.delete(voice_id)
        return record

    async def resolve(
        self, asked: str | Mapping[str, Any], principal: Principal, *, param: str
    ) -> CustomVoice:
        """The definition of a voice a client named, by ``{"id": ...}`` or by its name (the
        caller's own first, then shared ones), that this key may use. ``VoiceRefused`` (400 naming
        ``param``) when there is none such, ``InvalidParam`` (``voice_not_allowed``) when the key's
        policy does not allow it."""
        record: VoiceRecord | None = None
        if isinstance(asked, str):
            named = [r for r in await self.visible(principal) if r.name == asked]
            named.sort(key=lambda r: r.owner != principal.key_id)  # the key's own first
            record = named[0] if named else None
        else:
            voice_id = asked.get("id")
            if isinstance(voice_id, str) and voice_id:
                try:
                    record = await self.get(voice_id, principal)
                except VoiceNotFound:
                    record = None
        if record is None:
            accepted = ", ".join(f"'{n}'" for n in self.table.names())
            shown = asked if isinstance(asked, str) else asked.get("id")
            raise VoiceRefused(
                f"Invalid value: {shown!r}. Supported values are: {accepted}, or a custom voice of this key"
                " (`GET /v1/voices`).",
                param=param,
            )
        restricted = principal.policy.voices
        usable = (
            restricted is None
            or record.id in restricted
            or record.name in restricted
            or (bool(record.blend) and all(_allowed(v, restricted, self.table) for v in record.blend))
        )
        if not usable:
            raise InvalidParam(
                f"voice '{record.name}' is not allowed for this API key",
                param=param,
                code="voice_not_allowed",
            )
        return record.definition()


__all__ = [
    "NewVoice",
    "VoiceLibrary",
    "VoiceRecord",
    "VoiceStore",
    "open_voice_store",
    "parse_new_voice",
]
