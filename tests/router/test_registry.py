"""The registry file is reloaded on change, without a restart; a broken file keeps the last good one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from router.core import Router
from router.registry import Location, RegionRecord, Registry, dump_registry
from router.settings import RouterSettings


def _reg(*ids: str) -> Registry:
    return Registry(
        regions=[
            RegionRecord(id=i, url=f"http://127.0.0.1:{9000 + n}", location=Location(50, 8))
            for n, i in enumerate(ids)
        ]
    )


async def test_router_reloads_registry_without_restart(tmp_path: Path) -> None:
    path = tmp_path / "regions.json"
    dump_registry(_reg("a"), path)
    settings = RouterSettings(registry_path=str(path), registry_poll_s=0.05, probe_interval_s=0)
    router = Router(settings)
    await router.start()
    try:
        assert list(router.regions) == ["a"]
        kept = router.regions["a"]
        kept.observe_ttfa(0.9)
        dump_registry(_reg("a", "b"), path)
        for _ in range(100):
            if len(router.regions) == 2:
                break
            await asyncio.sleep(0.02)
        assert list(router.regions) == ["a", "b"]
        assert router.regions["a"] is kept  # unchanged regions keep their measurements
        path.write_text("{not json")
        await asyncio.sleep(0.2)
        assert list(router.regions) == ["a", "b"]
        assert "regions.json" in str(router.status()["registry"])
        dump_registry(_reg("b"), path)
        for _ in range(100):
            if list(router.regions) == ["b"]:
                break
            await asyncio.sleep(0.02)
        assert list(router.regions) == ["b"]
    finally:
        await router.aclose()
