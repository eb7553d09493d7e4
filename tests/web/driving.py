"""Driving the talk page: open it with the key on a transport, start talking, wait for the answer."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from playwright.async_api import Page

from tests.fixtures.edge import RunningEdge

TURN_TIMEOUT_S = 120.0  # Whisper + SmolLM2 + Kokoro on a shared 2-core CPU


async def snapshot(page: Page) -> dict[str, Any]:
    snap: dict[str, Any] = await page.evaluate("window.voicemesh.snapshot()")
    return snap


async def wait_for_answer(page: Page) -> dict[str, Any]:
    """Poll the page until a turn's answer has been played to the end (or fail with what it shows)."""
    deadline = time.monotonic() + TURN_TIMEOUT_S
    snap = await snapshot(page)
    while time.monotonic() < deadline:
        snap = await snapshot(page)
        if any(t["state"] == "done" and t["audioStarted"] for t in snap["turns"]):
            return snap
        await asyncio.sleep(0.5)
    raise AssertionError(f"no answer played within {TURN_TIMEOUT_S:.0f} s; the page shows {snap}")


async def talk(page: Page, edge: RunningEdge, transport: str) -> dict[str, Any]:
    """The page on ``transport`` (``webrtc`` or ``websocket``, chosen in the address as a user can)."""
    await page.goto(f"{edge.http_url}/?transport={transport}#key={edge.api_key}")
    assert "#key" not in page.url, "the key must leave the address bar"
    assert await page.locator("#transport").input_value() == transport
    await page.click("#start")
    return await wait_for_answer(page)


def played_peak(snap: dict[str, Any]) -> float:
    """The peak RMS the page measured where its answer plays: the player's output analyser on the
    WebSocket, the analyser on the remote track over WebRTC."""
    if snap["transport"] == "webrtc":
        return float(snap["webrtc"]["remotePeakRms"])
    return float(snap["player"]["peakRms"])
