"""Two router processes sharing a real Redis see one breaker per region.

The failing region is a real closed port on loopback (connection refused): a breaker only needs
real failures, not a real region, so this test starts no region process.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from router.api import SessionRouting
from router.core import Router
from router.registry import Location, RegionRecord, Registry, dump_registry
from router.settings import RouterSettings
from tests.fixtures.common import free_port
from tests.router.conftest import collect, text_turn

_OTHER_PROCESS = """
import asyncio, json, sys
from router.api import SessionRouting
from router.core import Router
from router.settings import RouterSettings
from wire.turn import TurnStart

async def main() -> None:
    path, url, ns = sys.argv[1:4]
    settings = RouterSettings(registry_path=path, redis_url=url, redis_namespace=ns, probe_interval_s=0,
                              breaker_fail_max=2, breaker_reset_s=60)
    async with Router(settings) as router:
        events = [ev async for ev in router.run_turn(
            SessionRouting("other", residency=frozenset({"dz"})), TurnStart(turn_id="x", text="hi"))]
        regions = {r["id"]: r["breaker"]["state"] for r in router.status()["regions"]}
        print(json.dumps({"states": regions, "events": [type(e).__name__ for e in events],
                          "tried": list(getattr(events[-1], "tried", ()))}))

asyncio.run(main())
"""


async def test_breaker_state_is_shared_between_router_processes(redis_url: str, tmp_path: Path) -> None:
    ns = f"shared{time.monotonic_ns()}"
    path = tmp_path / "regions.json"
    dump_registry(
        Registry(
            regions=[
                RegionRecord(
                    id="dead",
                    url=f"http://127.0.0.1:{free_port()}",
                    location=Location(50, 8),
                    residency=["dz"],
                )
            ]
        ),
        path,
    )
    settings = RouterSettings(
        registry_path=str(path),
        redis_url=redis_url,
        redis_namespace=ns,
        probe_interval_s=0,
        breaker_fail_max=2,
        breaker_reset_s=60,
    )
    session = SessionRouting("mine", residency=frozenset({"dz"}))
    async with Router(settings) as router:
        assert router.status()["breaker_storage"] == f"redis ({redis_url})"
        for _ in range(2):
            seen = await collect(router.run_turn(session, text_turn()))
            assert seen.routed == ["dead"] and seen.degraded is not None
        assert router.breakers.known_state("dead") == "open"

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _OTHER_PROCESS, str(path), redis_url, ns,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, stderr.decode()
    other = json.loads(stdout.decode().strip().splitlines()[-1])
    assert other["states"] == {"dead": "open"}
    # The other process never tried the region: its breaker was already open.
    assert other["events"] == ["Degraded"] and other["tried"] == []

    # And a third router with its own (memory) breakers would have tried it: the sharing is real.
    mem = RouterSettings(registry_path=str(path), probe_interval_s=0)
    async with Router(mem) as alone:
        seen = await collect(alone.run_turn(session, text_turn()))
        assert seen.routed == ["dead"]
