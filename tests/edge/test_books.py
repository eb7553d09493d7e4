"""The per-key books (``edge/tenancy/accounting.py``): the audit trail bounded per key, usage totals shared by
every edge through a real redis-server, and both kept on the edge while Redis is unreachable."""

from __future__ import annotations

import asyncio
import contextlib

import redis.asyncio as aioredis

from edge.stores.memory import MemoryTrail
from edge.tenancy.accounting import AUDIT_CAP, Accounting
from edge.tenancy.audit import AuditRecord, Hop, now
from edge.tenancy.usage import UsageDelta
from tests.fixtures.common import free_port
from tests.fixtures.router import KillableRedis
from wire.bounded_redis import BoundedRedis


def open_books(url: str, *, timeout_s: float = 0.5, audit_cap: int = AUDIT_CAP) -> Accounting:
    """An edge's books on its own Redis client (as each edge process has one)."""
    return Accounting.open(BoundedRedis(url, timeout_s=timeout_s), audit_cap=audit_cap)


async def close_books(books: Accounting) -> None:
    await books.aclose()
    if books.redis is not None:
        await books.redis.aclose()


def record(key_id: str, turn_id: str, **fields: object) -> AuditRecord:
    return AuditRecord(at=now(), key_id=key_id, session_id="sess_1", turn_id=turn_id, **fields)  # type: ignore[arg-type]


async def test_memory_audit_keeps_the_newest_records_per_key_up_to_its_cap() -> None:
    log = MemoryTrail[AuditRecord](cap=3)
    for i in range(5):
        await log.append(record("key_a", f"t{i}"))
    await log.append(record("key_b", "other"))
    assert [r.turn_id for r in await log.recent("key_a", 10)] == ["t4", "t3", "t2"]
    assert [r.turn_id for r in await log.recent("key_a", 1)] == ["t4"]
    assert [r.turn_id for r in await log.recent("key_b", 10)] == ["other"]
    assert await log.recent("key_c", 10) == []


async def test_two_edges_share_one_bounded_expiring_trail_and_add_to_one_usage(redis_url: str) -> None:
    a = open_books(redis_url, audit_cap=4)
    b = open_books(redis_url, audit_cap=4)
    hop = Hop(from_region="eu", to="us", reason="region_disconnected")
    try:
        for i in range(3):
            await a.book(
                record("key_shared", f"a{i}"), UsageDelta.of(audio_in_bytes=32_000, audio_out_bytes=0)
            )
        for i in range(3):
            delta = UsageDelta.of(audio_in_bytes=0, audio_out_bytes=96_000, tokens=(10, 5))
            await b.book(record("key_shared", f"b{i}", failovers=[hop], regions=["eu", "us"]), delta)
        turns = await a.audit.recent("key_shared", 10)
        assert [t.turn_id for t in turns] == ["b2", "b1", "b0", "a2"]  # every edge's, capped at 4
        assert turns[0].failovers == [hop] and turns[0].regions == ["eu", "us"]
        assert await b.usage.totals("key_shared") == {
            "turns": 6.0,
            "audio_in_s": 3.0,
            "audio_out_s": 6.0,
            "input_tokens": 30.0,
            "output_tokens": 15.0,
        }
        client = aioredis.Redis.from_url(redis_url)
        ttl = await client.ttl("voicemesh-audit:key_shared")
        assert 0 < ttl <= 7 * 24 * 3600  # an idle key's trail goes away by itself
        assert await client.llen("voicemesh-audit:key_shared") == 4
        await client.aclose()
    finally:
        await close_books(a)
        await close_books(b)


async def test_with_redis_unreachable_the_books_stay_on_this_edge() -> None:
    books = open_books(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.2)
    try:
        await books.book(record("key_down", "t1", outcome="degraded", reason="no_region_available"),
                         UsageDelta.of(audio_in_bytes=16_000, audio_out_bytes=0))  # fmt: skip
        (turn,) = await books.audit.recent("key_down", 10)
        assert (turn.turn_id, turn.outcome) == ("t1", "degraded")
        assert (await books.usage.totals("key_down"))["audio_in_s"] == 0.5
        assert books.redis is not None and books.redis.last_error  # and it says why
    finally:
        await close_books(books)


async def test_a_booking_goes_on_when_the_session_that_asked_for_it_closes(redis_url: str) -> None:
    """A client hangs up right after ``response.done``: the closing session cancels its response
    task while the record is on its way to Redis. The record still arrives."""
    books = open_books(redis_url)
    try:
        booking = asyncio.create_task(books.book(record("key_hangup", "t1"), UsageDelta()))
        await asyncio.sleep(0)  # the booking has started (it waits on Redis)
        booking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await booking
        await close_books(books)  # waits for what is pending
        books = open_books(redis_url)
        assert [t.turn_id for t in await books.audit.recent("key_hangup", 10)] == ["t1"]
        assert (await books.usage.totals("key_hangup"))["turns"] == 1.0
    finally:
        await close_books(books)


async def test_books_held_while_redis_was_down_reach_every_edge_once_it_is_back(
    killable_redis: KillableRedis,
) -> None:
    """A booking Redis could not take (a crash here; on a busy machine, a call past its bound) is held
    on the edge that wrote it, then pushed once Redis answers: another edge reads it, and the writing
    edge counts it once, not twice."""
    writer = open_books(killable_redis.url, timeout_s=0.2)
    reader = open_books(killable_redis.url, timeout_s=0.2)
    try:
        killable_redis.kill()
        await writer.book(record("key_back", "t1"), UsageDelta.of(audio_in_bytes=32_000, audio_out_bytes=0))
        assert [r.turn_id for r in await writer.audit.recent("key_back", 10)] == ["t1"]  # held here
        assert await reader.audit.recent("key_back", 10) == []
        killable_redis.start()
        async with asyncio.timeout(60):
            while not await reader.audit.recent("key_back", 10):  # noqa: ASYNC110 - another edge: no event
                await asyncio.sleep(0.1)
        for books in (reader, writer):
            assert [r.turn_id for r in await books.audit.recent("key_back", 10)] == ["t1"]
            usage = await books.usage.totals("key_back")
            assert (usage["turns"], usage["audio_in_s"]) == (1.0, 1.0)
    finally:
        await close_books(writer)
        await close_books(reader)
