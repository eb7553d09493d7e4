"""Session snapshots and client secrets in Redis (a real redis-server): two edges sharing one store
act as one, and an edge whose Redis is unreachable keeps its sessions itself."""

from __future__ import annotations

import httpx
import pytest

from edge.realtime.session_snapshot import SessionSnapshots
from edge.shared.errors import SessionNotFound
from edge.shared.state import SessionState
from edge.stores.redis.sessions import RedisFallbackStore
from tests.edge.conftest import session_id
from tests.fixtures.common import free_port
from tests.fixtures.edge import EdgeFactory
from voicemesh.realtime import client
from wire.bounded_redis import BoundedRedis
from wire.turn import Message


async def test_a_snapshot_written_through_one_edge_is_claimed_through_another(redis_url: str) -> None:
    """The store that really runs: ``SessionSnapshots`` over the Redis store, one client per edge."""
    one, two = BoundedRedis(redis_url), BoundedRedis(redis_url)
    try:
        writer = SessionSnapshots(RedisFallbackStore(one), ttl_s=60)
        reader = SessionSnapshots(RedisFallbackStore(two), ttl_s=60)
        state = SessionState(id="sess_redis", key_id="k", voice="jf_alpha", history=[Message("user", "hi")])
        await writer.save(state)
        assert await reader.load("sess_redis") == state
        with pytest.raises(SessionNotFound):
            await reader.claim("sess_redis", "another-key", lease="l2")  # another key's session
        claimed = await reader.claim("sess_redis", "k", lease="l2")
        assert claimed.state == state
        assert (await writer.stored("sess_redis")).taken_from("l1") and not (
            await writer.stored("sess_redis")
        ).taken_from("l2")
        await writer.delete("sess_redis")
        assert await reader.load("sess_redis") is None
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_snapshot_expires_in_redis_after_its_ttl(redis_url: str) -> None:
    redis = BoundedRedis(redis_url)
    try:
        snapshots = SessionSnapshots(RedisFallbackStore(redis), ttl_s=60)
        await snapshots.save(SessionState(id="sess_ttl", key_id="k"))
        ttl = await redis.client.ttl("voicemesh-edge:session:sess_ttl")
        assert 0 < ttl <= 60
    finally:
        await redis.aclose()


async def test_with_redis_unreachable_the_snapshot_stays_on_this_edge() -> None:
    """A closed port: every call fails at once (bounded), and the edge's own memory keeps the session."""
    redis = BoundedRedis(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.2)
    try:
        store = RedisFallbackStore(redis)
        snapshots = SessionSnapshots(store, ttl_s=60)
        state = SessionState(id="sess_down", key_id="k", history=[Message("user", "still here")])
        await snapshots.save(state)
        assert not store.reachable and store.status()["error"]
        assert await snapshots.load("sess_down") == state
    finally:
        await redis.aclose()


async def test_client_secret_minted_on_one_edge_works_on_another(
    edge_factory: EdgeFactory, redis_url: str
) -> None:
    nowhere = [("nowhere", f"http://127.0.0.1:{free_port()}")]
    first = await edge_factory(nowhere, store_url=redis_url)
    second = await edge_factory(nowhere, store_url=redis_url)
    async with httpx.AsyncClient() as http:
        minted = await http.post(
            f"{first.http_url}/v1/realtime/client_secrets", json={},
            headers={"Authorization": f"Bearer {first.api_key}"},
        )  # fmt: skip
    secret = minted.json()["value"]
    async with client(second.url, secret).realtime.connect(model="x") as conn:
        sid = session_id(await conn.recv())
        # Live session state is in the shared store, readable by the other edge.
        assert (await first.services.sessions.load(sid)) is not None
