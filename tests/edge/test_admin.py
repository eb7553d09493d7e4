"""``/status`` needs the admin scope, and shows no credential.

Fast tier: Litestar's test client drives the real app; a scripted router, energy VAD and tone voice
(``edge.testing``) stand in for the models, which are not what is under test here. The Redis URLs
point at a closed loopback port: what is tested is that their passwords never show, and that the
edge answers with Redis unreachable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import jwt
import pytest
from litestar.testing import TestClient

from edge.app.asgi import create_app
from edge.shared.settings import EdgeSettings
from edge.testing import memory_services
from router.breaker_storage import storage_from_url
from router.core import Router
from router.registry import RegionRecord, Registry
from router.settings import RouterSettings
from tests.fixtures.common import free_port

CALLER, ADMIN = "caller-key-0123", "admin-key-4567"
JWT_SECRET = "jwt-secret-for-the-admin-tests-0123456789"
PASSWORD = "hunter2-redis-password"
SETTINGS = EdgeSettings(api_keys=(CALLER,), admin_keys=(ADMIN,), jwt_secret=JWT_SECRET)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _jwt(scope: str | None) -> str:
    claims: dict[str, object] = {"sub": "ops", "exp": int(time.time()) + 60}
    if scope is not None:
        claims["scope"] = scope
    return jwt.encode(claims, JWT_SECRET, algorithm="HS256")


def test_status_is_for_admin_credentials_only() -> None:
    with TestClient(create_app(memory_services(settings=SETTINGS))) as http:
        assert http.get("/status").status_code == 401
        minted = http.post("/v1/realtime/client_secrets", json={}, headers=bearer(ADMIN))
        secret = minted.json()["value"]
        assert secret.startswith("ek_")  # minted by an admin key, still no admin scope
        for token in (secret, CALLER, _jwt(None), _jwt("realtime")):
            refused = http.get("/status", headers=bearer(token))
            assert refused.status_code == 403, token
            error = refused.json()["error"]
            assert error["code"] == "insufficient_scope" and "admin" in error["message"]
        for token in (ADMIN, _jwt("realtime admin")):
            ok = http.get("/status", headers=bearer(token))
            assert ok.status_code == 200 and "router" in ok.json(), token
        # An admin key is also a caller key: it opens sessions.
        with http.websocket_connect("/v1/realtime", headers=bearer(ADMIN)) as ws:
            assert ws.receive_json()["type"] == "session.created"


def test_client_secret_cannot_mint_another_and_says_why() -> None:
    with TestClient(create_app(memory_services(settings=SETTINGS))) as http:
        secret = http.post("/v1/realtime/client_secrets", json={}, headers=bearer(CALLER)).json()["value"]
        again = http.post("/v1/realtime/client_secrets", json={}, headers=bearer(secret))
        assert again.status_code == 403
        assert again.json()["error"]["code"] == "insufficient_scope"


def test_status_and_logs_show_no_password(caplog: pytest.LogCaptureFixture) -> None:
    closed = free_port()
    redis_url = f"redis://:{PASSWORD}@127.0.0.1:{closed}/0"
    region_url = f"http://user:{PASSWORD}@127.0.0.1:{free_port()}"
    settings = EdgeSettings(api_keys=(CALLER,), admin_keys=(ADMIN,), store_url=redis_url)
    router = Router(
        RouterSettings(probe_interval_s=0),
        registry=Registry(regions=[RegionRecord(id="secretive", url=region_url)]),
        storage=storage_from_url(redis_url),
    )
    caplog.set_level(logging.INFO)
    # What the router's start does first (the app runs in the test client's own loop): read the
    # breakers, which finds Redis unreachable.
    asyncio.run(router.breakers.refresh(list(router.regions)))
    with TestClient(create_app(memory_services(router, settings=settings))) as http:
        # The edge works with Redis unreachable (sessions and secrets kept in this process).
        secret = http.post("/v1/realtime/client_secrets", json={}, headers=bearer(CALLER)).json()["value"]
        with http.websocket_connect("/v1/realtime", headers=bearer(secret)) as ws:
            assert ws.receive_json()["type"] == "session.created"
        res = http.get("/status", headers=bearer(ADMIN))
    assert res.status_code == 200
    body = res.json()
    text = json.dumps(body)
    assert PASSWORD not in text
    store = body["edge"]["store"]
    assert store["backend"] == "redis" and store["reachable"] is False
    assert store["url"] == f"redis://:***@127.0.0.1:{closed}/0"
    region = body["router"]["regions"][0]
    assert region["url"].startswith("http://user:***@127.0.0.1:")
    assert "unreachable" in body["router"]["breaker_storage"]
    assert body["router"]["breaker_storage"].startswith(f"redis (redis://:***@127.0.0.1:{closed}/0)")
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "unreachable" in logged  # the outage was logged...
    assert PASSWORD not in logged and secret not in logged and ADMIN not in logged  # ...no credential
