"""The operations page in a real Chromium: what it shows must match the edge's /status (admin key)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from playwright.async_api import Page

from tests.web.conftest import WebEdge, docs_screenshot
from voicemesh.realtime import connect


async def ops_snapshot(page: Page) -> dict[str, Any]:
    snap: dict[str, Any] = await page.evaluate("window.voicemeshOps.snapshot()")
    return snap


async def wait_for_polls(page: Page, n: int, timeout_s: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    snap = await ops_snapshot(page)
    while snap["polls"] < n:
        assert time.monotonic() < deadline, f"/ops polled /status {snap['polls']} times in {timeout_s} s"
        await asyncio.sleep(0.25)
        snap = await ops_snapshot(page)
    return snap


async def test_ops_page_shows_the_region_states_of_status(page: Page, web_edge: WebEdge) -> None:
    await page.goto(f"{web_edge.http_url}/ops#key={web_edge.admin_key}")
    # Wait until the unreachable region's probe has failed at least once, so the states differ.
    deadline = time.monotonic() + 30
    while True:
        await wait_for_polls(page, 2)
        await asyncio.sleep(1.1)  # one more poll after the check below sees the same router state
        async with httpx.AsyncClient() as http:
            res = await http.get(
                f"{web_edge.http_url}/status", headers={"Authorization": f"Bearer {web_edge.admin_key}"}
            )
        assert res.status_code == 200, res.text
        status = res.json()
        regions = {r["id"]: r for r in status["router"]["regions"]}
        if regions["us-east"]["probe_ok"] is False or time.monotonic() > deadline:
            break
    snap = await ops_snapshot(page)
    shown = {r["id"]: r for r in snap["regions"]}

    assert set(shown) == set(regions) == {"test-region", "us-east"}
    for rid, r in regions.items():
        assert shown[rid]["breaker"] == r["breaker"]["state"], (rid, shown[rid], r["breaker"])
        assert shown[rid]["residency"] == ", ".join(r["residency"])
        lat, lon = r["location"]["lat"], r["location"]["lon"]
        assert shown[rid]["location"] == f"{lat:.2f}, {lon:.2f}"
        health = await page.locator(f'.region-card[data-region="{rid}"] .health').inner_text()
        assert health == ("unreachable" if r["probe_ok"] is False else r["region_status"]), (rid, health)
    assert regions["test-region"]["probe_ok"] is True
    assert regions["us-east"]["probe_ok"] is False
    sessions = await page.locator("#sessions").get_attribute("data-sessions")
    assert sessions == str(status["edge"]["open_sessions"])
    # The chart has been drawn (non-blank canvas).
    painted = await page.evaluate(
        """() => { const c = document.querySelector('#ewma');
                  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"""
    )
    assert painted > 1000, painted
    if (path := docs_screenshot("ops.png")) is not None:
        await page.screenshot(path=str(path), full_page=True)


async def test_status_needs_the_key_and_the_page_asks_again(page: Page, web_edge: WebEdge) -> None:
    async with httpx.AsyncClient() as http:
        res = await http.get(f"{web_edge.http_url}/status")
        assert res.status_code == 401, res.text
        caller = await http.get(
            f"{web_edge.http_url}/status", headers={"Authorization": f"Bearer {web_edge.api_key}"}
        )
        assert caller.status_code == 403, caller.text  # the talk page's key is not an admin key
    await page.goto(f"{web_edge.http_url}/ops#key=not-the-key")
    await page.wait_for_selector("#key-form:not([hidden])", timeout=10_000)
    assert "refused" in await page.locator("#error").inner_text()
    assert (await ops_snapshot(page))["regions"] == []
    # The caller key is refused too, with its own reason.
    await page.fill("#key-form input", web_edge.api_key)
    await page.click("#key-form button")
    await page.wait_for_function(
        "document.querySelector('#error').textContent.includes('not an admin key')", timeout=10_000
    )
    await page.wait_for_selector("#key-form:not([hidden])", timeout=10_000)
    # Typing the admin key recovers without a reload.
    await page.fill("#key-form input", web_edge.admin_key)
    await page.click("#key-form button")
    snap = await wait_for_polls(page, 1)
    assert {r["id"] for r in snap["regions"]} == {"test-region", "us-east"}


async def test_ops_page_draws_the_waterfall_of_a_real_turn(page: Page, web_edge: WebEdge) -> None:
    """A typed turn through the real region (stock openai client), then its stages on the page: the
    edge's bars in pipeline order and the region's own lane, for that response."""
    events: list[Any] = []
    async with connect(web_edge.url, web_edge.api_key, max_retries=0) as conn:
        await conn.session.update(
            session={"type": "realtime", "instructions": "Answer in one short sentence."}
        )
        await conn.conversation.item.create(
            item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hi."}]}
        )
        await conn.response.create()
        async with asyncio.timeout(180):  # only against a hang
            async for event in conn:
                events.append(event)
                if event.type == "response.done":
                    break
    done = events[-1].response
    assert done.status == "completed", done
    await page.goto(f"{web_edge.http_url}/ops#key={web_edge.admin_key}")
    row = page.locator(f'.wf-row[data-response="{done.id}"]')
    await row.wait_for(timeout=20_000)
    (shown,) = [r for r in (await ops_snapshot(page))["waterfall"] if r["response"] == done.id]
    edge = [b["stage"] for b in shown["bars"] if b["lane"] == "edge"]
    assert edge == ["route", "connect", "queue", "region", "relay"], shown  # a typed turn: no eos/commit
    region = [b["stage"] for b in shown["bars"] if b["lane"] == "region"]
    assert region and set(region) <= {"stt", "llm_ttft", "first_clause", "tts_first_audio"}, shown
    # The bars are drawn: the region stage (the model's work) has a visible width on the track.
    box = await row.locator('.wf-bar[data-stage="region"]').bounding_box()
    assert box is not None and box["width"] > 1, box
    assert shown["failovers"] == 0
