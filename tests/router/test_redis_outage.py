"""A real redis-server killed mid-run (SIGKILL) while the edge keeps answering, then started again.

The edge is the real app on its real server (``edge.app.server.serve_edge``), with its session store
and its router's breakers in that Redis. The regions are scripted stand-ins (``router.testing``)
and the VAD and fallback voice are ``edge.testing`` stand-ins: models are not what is under test,
Redis is. One region crashes every turn (so its breaker has something to decide), the other
answers. During the outage new sessions still open, client secrets are still minted and redeemed,
turns are still answered and the crashing region's breaker still opens, in this process; when
Redis is back, what was decided meanwhile is shared again: another replica sees the open breaker
and redeems a secret minted during the outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from edge.app.server import serve_edge
from edge.shared.settings import EdgeSettings, LimitSettings
from edge.stores.redis.sessions import RedisFallbackStore
from edge.tenancy.client_secrets import ClientSecrets
from edge.testing import memory_services
from router.api import SessionRouting
from router.core import Router
from router.registry import Location, Registry
from router.settings import RouterSettings
from router.testing import Crash, ScriptedRegion, answer
from tests.fixtures.common import free_port
from tests.fixtures.router import KillableRedis
from tests.router.conftest import collect, text_turn
from wire.bounded_redis import BoundedRedis

KEY, ADMIN = "caller-key-0123", "admin-key-4567"
GUARD_S = 60.0
"""Only stops a broken test from hanging: nothing here is timed."""


@contextlib.asynccontextmanager
async def edge_on(redis_url: str, router: Router) -> AsyncIterator[str]:
    limits = replace(LimitSettings(), mint_burst=10_000)  # the test mints while it waits for Redis
    settings = EdgeSettings(
        port=free_port(), api_keys=(KEY,), admin_keys=(ADMIN,), store_url=redis_url, limits=limits
    )
    services = memory_services(router, settings=settings)
    stop, listening = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        serve_edge(settings, router, stop=stop, report=lambda _: listening.set(), services=services)
    )
    waiter = asyncio.create_task(listening.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    assert listening.is_set(), "the edge did not start"
    try:
        yield f"127.0.0.1:{settings.port}"
    finally:
        stop.set()
        await task


async def _next(ws: ClientConnection, type_: str) -> dict[str, Any]:
    async with asyncio.timeout(GUARD_S):
        while True:
            event: dict[str, Any] = json.loads(await ws.recv())
            if event["type"] in (type_, "error"):
                return event


async def session_turn(base: str, token: str) -> dict[str, Any]:
    """Open a session with ``token``, ask one typed question, return its ``response.done``."""
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(f"ws://{base}/v1/realtime?model=x", additional_headers=headers) as ws:
        assert (await _next(ws, "session.created"))["type"] == "session.created"
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}
        await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        await ws.send(json.dumps({"type": "response.create"}))
        done = await _next(ws, "response.done")
        assert done["type"] == "response.done", done
        return done


async def mint(http: httpx.AsyncClient) -> str:
    res = await http.post("/v1/realtime/client_secrets", json={}, headers={"Authorization": f"Bearer {KEY}"})
    assert res.status_code == 200, res.text
    return str(res.json()["value"])


async def status(http: httpx.AsyncClient) -> dict[str, Any]:
    res = await http.get("/status", headers={"Authorization": f"Bearer {ADMIN}"})
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    return body


def served_by(done: dict[str, Any]) -> str:
    assert done["response"]["status"] == "completed", done
    return str(done["response"]["metadata"]["voicemesh_region"])


async def test_edge_keeps_answering_through_a_redis_outage(killable_redis: KillableRedis) -> None:
    ns = f"outage{time.monotonic_ns()}"
    router_settings = RouterSettings(
        location=Location(50.0, 8.0), probe_interval_s=0, redis_url=killable_redis.url, redis_namespace=ns,
        breaker_fail_max=2, breaker_reset_s=600,
    )  # fmt: skip
    async with (
        ScriptedRegion("crashy", lambda _s: [Crash()]) as crashy,  # near: tried first
        ScriptedRegion("steady", answer("Hello there.")) as steady,  # far
    ):
        registry = Registry(
            regions=[
                crashy.record(Location(50.1, 8.1), residency=["dz"]),
                steady.record(Location(38.9, -77.4)),
            ]
        )
        router = Router(router_settings, registry=registry)
        await router.start()
        async with (
            edge_on(killable_redis.url, router) as base,
            httpx.AsyncClient(base_url=f"http://{base}") as http,
        ):
            # Before: secrets and sessions through Redis, turns answered (crashy fails over to steady).
            assert served_by(await session_turn(base, await mint(http))) == "steady"
            assert (await status(http))["edge"]["store"]["reachable"] is True

            killable_redis.kill()

            # During: new sessions open (API key and a freshly minted secret), turns are answered,
            # and crashy's breaker opens here, with no Redis to share it (turns of a session that
            # only crashy may serve, by residency, fail on it until it opens).
            during = await mint(http)
            for token in (KEY, during, KEY):
                assert served_by(await session_turn(base, token)) == "steady"
            only_crashy = SessionRouting("dz-only", residency=frozenset({"dz"}))
            for _ in range(router_settings.breaker_fail_max):
                seen_turn = await collect(router.run_turn(only_crashy, text_turn()))
                assert seen_turn.degraded is not None
            assert router.breakers.known_state("crashy") == "open"
            seen = await status(http)
            assert seen["edge"]["store"]["reachable"] is False
            assert "unreachable" in seen["router"]["breaker_storage"]
            tried = len(crashy.starts)
            assert served_by(await session_turn(base, KEY)) == "steady"
            assert len(crashy.starts) == tried  # the open breaker keeps turns away from it

            killable_redis.start()  # empty: nothing survived the crash

            # After: the edge finds Redis again on its own, and writes back what it decided.
            async def recovered() -> bool:
                await mint(http)  # store traffic, as any session makes
                await router.breakers.refresh(["crashy"])
                seen = await status(http)
                breakers = str(seen["router"]["breaker_storage"])
                return bool(seen["edge"]["store"]["reachable"]) and "unreachable" not in breakers

            async with asyncio.timeout(GUARD_S):
                while not await recovered():  # noqa: ASYNC110 - Redis has no event to wait on
                    await asyncio.sleep(0.2)
            assert served_by(await session_turn(base, KEY)) == "steady"

        # Another replica on the same Redis shares the state decided during the outage.
        other = Router(replace(router_settings), registry=registry)
        await other.start()
        try:
            assert other.breakers.known_state("crashy") == "open"
        finally:
            await other.aclose()
        redis = BoundedRedis(killable_redis.url)
        store = RedisFallbackStore(redis)
        try:
            assert await ClientSecrets(store, default_ttl_s=60).redeem(during) is not None
            assert store.reachable
        finally:
            await redis.aclose()


async def test_a_connection_a_restarted_redis_closed_is_not_an_outage(killable_redis: KillableRedis) -> None:
    """Pooled connections outlive a Redis restart; the first command on one fails as the server
    closed it. That is one dropped connection, retried at once on a new one, not Redis being down
    (taken as an outage, the edges kept their session snapshots in local memory for ``retry_s``,
    and an edge killed next lost them: the chaos drill). Fails before the fix, passes after."""
    redis = BoundedRedis(killable_redis.url)
    try:
        await redis.call(lambda: redis.client.set(b"x", b"1"))  # a pooled connection in each pool
        assert redis.call_sync(lambda r: r.set(b"y", b"1"))
        killable_redis.kill()
        killable_redis.start()  # empty: nothing survived the crash
        assert await redis.call(lambda: redis.client.get(b"x")) is None  # answered, on a new connection
        assert redis.call_sync(lambda r: r.get(b"y")) is None
        assert redis.last_error == ""
    finally:
        await redis.aclose()
