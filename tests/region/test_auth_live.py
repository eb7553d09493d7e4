"""Authentication on a real ``voicemesh region serve`` process (slow tier: real models, shared vLLM).

The region fixture starts regions with the session's key set (``tests/fixtures/region.py``); a
client without a token, or with one from another key set, is refused at the handshake. A metrics
credential added to that key set while the region runs reads ``/metrics`` and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.fixtures.region import RunningRegion
from wire.client import RegionConnection, run_turn
from wire.errors import RegionUnavailable
from wire.region_auth import ClientAuth, TokenSigner
from wire.region_keys import KeyFile, ensure_key_set, ensure_metrics_credential, metrics_token_path
from wire.turn import TurnStart


async def test_an_unauthenticated_turn_sent_straight_to_a_region_is_refused(
    region: RunningRegion, tmp_path: Path
) -> None:
    with pytest.raises(RegionUnavailable) as anonymous:
        await RegionConnection.open(region.url, region=region.id, auth=ClientAuth())
    assert "HTTP 401" in anonymous.value.message and "missing credential" in anonymous.value.message

    other = tmp_path / "other-keys.json"
    ensure_key_set(other)
    with pytest.raises(RegionUnavailable) as stranger:
        await RegionConnection.open(
            region.url, region=region.id, auth=ClientAuth(signer=TokenSigner(KeyFile(other)))
        )
    assert "unknown or retired key" in stranger.value.message

    # The same region serves the session's own edge token.
    result = await run_turn(region.url, TurnStart(turn_id="auth-live", text="Say hi.", max_output_tokens=8))
    assert result.status == "completed", result


async def test_a_region_shows_only_ready_without_a_token_and_refuses_metrics(region: RunningRegion) -> None:
    async with httpx.AsyncClient(base_url=region.url, timeout=10) as http:
        bare = await http.get("/health")
        full = await http.get("/health", headers=region.headers())
        metrics = await http.get("/metrics")
        signed_metrics = await http.get("/metrics", headers=region.headers())
    assert bare.status_code == 200 and bare.json() == {"status": "ready"}
    assert full.json()["region"] == region.id and "llm_url" in full.json()
    assert metrics.status_code == 401 and "missing credential" in metrics.text
    assert signed_metrics.status_code == 200 and "voicemesh_region" in signed_metrics.text


async def test_a_running_region_takes_a_new_metrics_credential_for_metrics_only(
    region: RunningRegion, region_keys: Path
) -> None:
    ensure_metrics_credential(region_keys)  # the region re-reads its key file on change: no restart
    scraper = {"Authorization": f"Bearer {metrics_token_path(region_keys).read_text()}"}
    async with httpx.AsyncClient(base_url=region.url, timeout=10) as http:
        metrics = await http.get("/metrics", headers=scraper)
        health = await http.get("/health", headers=scraper)
    assert metrics.status_code == 200 and "voicemesh_region" in metrics.text
    assert health.status_code == 401 and "GET /metrics only" in health.text
