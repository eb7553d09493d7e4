"""The edge's ``GET /metrics`` asks for the metrics credential, as a region's does (issue 34), and its
per-key labels say nothing of a key.

Fast tier: Litestar's test client drives the real app on ``edge.testing`` stand-ins, with a real
region key set and metrics credential written by ``wire.region_keys`` (what ``voicemesh up`` makes).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from litestar.testing import TestClient

from edge.app.asgi import create_app
from edge.shared import metrics
from edge.shared.metrics import MAX_KEY_LABELS, key_label
from edge.shared.settings import EdgeSettings
from edge.tenancy.auth import key_id
from edge.testing import ScriptedRouter, memory_services, spoken_reply
from wire.region_auth import KEYS_ENV, TokenSigner
from wire.region_keys import KeyFile, ensure_key_set, ensure_metrics_credential, metrics_token_path

CALLER, ADMIN = "vm-caller-key-0123456789", "vma-admin-key-0123456789"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def key_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "region-keys.json"
    ensure_key_set(path)
    ensure_metrics_credential(path)
    monkeypatch.setenv(KEYS_ENV, str(path))
    return path


def client() -> TestClient:  # type: ignore[type-arg]
    settings = EdgeSettings(api_keys=(CALLER,), admin_keys=(ADMIN,))
    return TestClient(create_app(memory_services(ScriptedRouter(spoken_reply("Hi.")), settings=settings)))


def test_metrics_take_the_metrics_credential_or_an_admin_key_and_nothing_else(key_set: Path) -> None:
    token = metrics_token_path(key_set).read_text().strip()
    with client() as http:
        refused = http.get("/metrics")
        assert refused.status_code == 401 and "metrics credential" in refused.json()["error"]["message"]
        assert http.get("/metrics", headers=bearer(CALLER)).status_code == 403  # a caller is not an admin
        assert http.get("/metrics", headers=bearer("vmm_" + "x" * 43)).status_code == 401
        for good in (token, ADMIN, TokenSigner(KeyFile(key_set)).token()):
            ok = http.get("/metrics", headers=bearer(good))
            assert ok.status_code == 200 and "voicemesh_edge_sessions_open" in ok.text
        # The scraper's credential reads metrics only, as at a region.
        assert http.get("/status", headers=bearer(token)).status_code == 401


def test_without_a_region_key_set_only_an_admin_reads_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEYS_ENV, raising=False)
    with client() as http:
        assert http.get("/metrics").status_code == 401
        assert http.get("/metrics", headers=bearer("vmm_" + "x" * 43)).status_code == 401
        assert http.get("/metrics", headers=bearer(ADMIN)).status_code == 200


def test_key_labels_reveal_nothing_of_the_key_and_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    configured = key_id("vm-SECRETprefix-and-the-rest")
    label = key_label(configured)
    assert "SECRET" not in label and "vm-" not in label and label.startswith("key_")
    assert key_label(configured) == label  # stable: one series per key
    stored = "key_0123456789abcdef"  # a stored key's record id (random) is already safe
    assert key_label(stored) == stored
    monkeypatch.setattr(metrics, "_key_labels", set())
    labels = {key_label(f"jwt_tenant-{i}") for i in range(MAX_KEY_LABELS + 10)}
    assert len(labels) == MAX_KEY_LABELS + 1 and "other" in labels
