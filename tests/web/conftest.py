"""A real headless Chromium (Debian's ``chromium``) driven by playwright, with a WAV as its microphone.

playwright's wheel carries its own driver; its browser downloads are not used (nothing can be
fetched here): we launch the system Chromium. Flags from ../shared/FINDINGS.md.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Playwright, async_playwright

from router.registry import Location, RegionRecord, Registry
from tests.fixtures.common import SpeechFactory, free_port
from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RunningRegion

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--use-fake-ui-for-media-stream",  # grant the microphone without a prompt
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

QUESTION = "What is the weather like in London today?"
"""What the fake microphone says; the test looks for its key words in the page's transcript (espeak-ng
speech that Whisper base hears right: it turns "capital of France" into "capital on friends")."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Talk tests first: then /ops (and its screenshot) shows a region that has served turns."""
    slots = [i for i, item in enumerate(items) if item.nodeid.startswith("tests/web/")]
    ordered = sorted((items[i] for i in slots), key=lambda item: "test_ops_page" in item.nodeid)
    for i, item in zip(slots, ordered, strict=True):
        items[i] = item


def chromium_path() -> str:
    path = os.environ.get("VOICEMESH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail("chromium is missing: run `make setup` (apt installs chromium) or set VOICEMESH_CHROMIUM")
    return path


@pytest_asyncio.fixture(scope="session")
async def playwright() -> AsyncIterator[Playwright]:
    async with async_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def mic_wav(speech: SpeechFactory) -> Path:
    """48 kHz speech with 3 s of silence after it, so the edge's VAD sees the end of the utterance
    before the file runs out (``%noloop``: the question is asked once, never repeated)."""
    return speech(QUESTION, rate=48_000, lead_s=0.5, tail_s=3.0)


@pytest_asyncio.fixture(scope="session")
async def browser(playwright: Playwright, mic_wav: Path) -> AsyncIterator[Browser]:
    """One Chromium for the web tests; its fake microphone plays ``mic_wav`` once per capture."""
    b = await playwright.chromium.launch(
        executable_path=chromium_path(),
        args=[*CHROMIUM_FLAGS, f"--use-file-for-fake-audio-capture={mic_wav}%noloop"],
    )
    try:
        yield b
    finally:
        await b.close()


@pytest_asyncio.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh browser context per test (its own sessionStorage), failing the test on page errors."""
    context = await browser.new_context(viewport={"width": 1100, "height": 820})
    p = await context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield p
    finally:
        await context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def docs_screenshot(name: str) -> Path | None:
    """Where to save a documentation screenshot: ``docs/img/NAME`` when ``VOICEMESH_SCREENSHOTS=1``."""
    if os.environ.get("VOICEMESH_SCREENSHOTS") != "1":
        return None
    return Path(__file__).resolve().parents[2] / "docs" / "img" / name


@dataclass
class WebEdge(RunningEdge):
    admin_key: str = ""
    """What the operations page needs for ``/status`` (``api_key`` is the talk page's caller key)."""


@pytest_asyncio.fixture(scope="session")
async def web_edge(edge_factory: EdgeFactory, region: RunningRegion) -> WebEdge:
    """An edge in front of the session's real region, plus a registered region nobody runs (so the
    operations page has a healthy and an unreachable region to tell apart). Locations and residency
    tags make the registry look like a real one. It has a caller key and an admin key."""
    dead = ("us-east", f"http://127.0.0.1:{free_port()}")
    admin = "admin-" + secrets.token_hex(8)
    edge = WebEdge(
        **vars(await edge_factory([region, dead], admin_keys=(admin,), keep=True)), admin_key=admin
    )
    edge.router.apply_registry(
        Registry(
            regions=[
                RegionRecord(
                    id=region.id,
                    url=region.url,
                    location=Location(50.11, 8.68),
                    residency=["eu"],
                    capacity=region.max_concurrent,
                ),
                RegionRecord(id=dead[0], url=dead[1], location=Location(38.9, -77.04), residency=["us"]),
            ]
        )
    )
    return edge


@pytest_asyncio.fixture(scope="session")
async def lonely_web_edge(edge_factory: EdgeFactory) -> RunningEdge:
    """An edge whose only region is a port nobody listens on: every turn is answered by Piper."""
    return await edge_factory(
        [("nowhere", f"http://127.0.0.1:{free_port()}")],
        hold_message="Sorry, no region can answer right now.",
        keep=True,
    )
