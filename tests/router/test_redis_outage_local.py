"""With Redis unreachable from the start, the breakers still work, in this process.

pybreaker's own Redis storage would answer "closed" and a zero fail count to every read while Redis
is down (no breaker could ever trip) and its constructor would raise. Fast tier: the Redis URL is a
closed loopback port (connection refused at once) and the region is a scripted stand-in
(``router.testing``) that crashes every turn: only the breaker is under test.
"""

from __future__ import annotations

from router.api import SessionRouting
from router.breaker_storage import RedisBreakerStorage, storage_from_url
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from router.testing import Crash, ScriptedRegion
from tests.fixtures.common import free_port
from tests.router.conftest import collect, text_turn


async def test_breaker_opens_in_memory_when_redis_is_unreachable() -> None:
    url = f"redis://:secret-pw@127.0.0.1:{free_port()}/0"
    settings = RouterSettings(probe_interval_s=0, breaker_fail_max=2, breaker_reset_s=600)
    storage = storage_from_url(url)
    assert isinstance(storage, RedisBreakerStorage)
    async with ScriptedRegion("crashy", lambda _s: [Crash()]) as crashy:
        async with Router(settings, registry=Registry(regions=[crashy.record()]), storage=storage) as router:
            session = SessionRouting("s")
            for _ in range(2):
                seen = await collect(router.run_turn(session, text_turn()))
                assert seen.routed == ["crashy"] and seen.degraded is not None
            assert router.breakers.known_state("crashy") == "open"
            seen = await collect(router.run_turn(session, text_turn()))
            assert seen.routed == [] and seen.degraded is not None  # refused by the open breaker
            assert len(crashy.starts) == 2
            described = str(router.status()["breaker_storage"])
            assert "unreachable" in described and "secret-pw" not in described
            assert not storage.link.reachable
