"""Client secrets: stored hashed, optionally single-use, minted under their own rate bucket, and a
junk mint request is a 400 with a reason, never a 500.

Fast tier: Litestar's test client drives the real app on in-memory stores; a scripted router, energy
VAD and tone voice (``edge.testing``) stand in for the models, which are not what is under test.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from litestar.exceptions import WebSocketDisconnect
from litestar.testing import TestClient

from edge.app.asgi import create_app
from edge.shared.errors import NotAuthenticated
from edge.shared.settings import EdgeSettings, LimitSettings
from edge.stores.memory import LocalStore
from edge.tenancy.client_secrets import MintRequest, digest
from edge.testing import memory_services

KEY = "caller-key-0123"
AUTH = {"Authorization": f"Bearer {KEY}"}


def _mint(http: TestClient[Any], body: object = None) -> dict[str, Any]:
    res = http.post("/v1/realtime/client_secrets", json=body if body is not None else {}, headers=AUTH)
    assert res.status_code == 200, res.text
    minted: dict[str, Any] = res.json()
    return minted


def test_the_store_holds_a_hash_of_the_secret_never_the_secret() -> None:
    services = memory_services(settings=EdgeSettings(api_keys=(KEY,)))
    with TestClient(create_app(services)) as http:
        secret = _mint(http)["value"]
        assert isinstance(services.store, LocalStore)
        keys = services.store.keys()
        assert f"secret:{digest(secret)}" in keys
        assert not any(secret in k for k in keys)
        stored = asyncio.run(services.store.get(f"secret:{digest(secret)}"))
        assert stored is not None and secret.encode() not in stored
        # And it still opens a session (twice: not single-use by default).
        for _ in range(2):
            with http.websocket_connect(
                "/v1/realtime", subprotocols=["realtime", f"openai-insecure-api-key.{secret}"]
            ) as ws:
                assert ws.receive_json()["type"] == "session.created"


def test_single_use_secret_opens_one_session_only() -> None:
    with TestClient(create_app(memory_services(settings=EdgeSettings(api_keys=(KEY,))))) as http:
        secret = _mint(http, {"voicemesh": {"single_use": True}})["value"]
        with http.websocket_connect("/v1/realtime", headers={"Authorization": f"Bearer {secret}"}) as ws:
            assert ws.receive_json()["type"] == "session.created"
        with pytest.raises(WebSocketDisconnect) as refused:
            with http.websocket_connect("/v1/realtime", headers={"Authorization": f"Bearer {secret}"}) as ws:
                ws.receive_json()
        assert refused.value.code == 4401 and refused.value.detail == "invalid_api_key"


async def test_two_handshakes_racing_for_a_single_use_secret_one_wins() -> None:
    services = memory_services(settings=EdgeSettings(api_keys=(KEY,)))
    owner = await services.auth.authenticate(KEY)
    for _ in range(20):
        secret, _ = await services.auth.secrets.mint(owner.key_id, MintRequest(single_use=True))
        results = await asyncio.gather(
            *(services.auth.authenticate(secret) for _ in range(2)), return_exceptions=True
        )
        assert sum(not isinstance(r, BaseException) for r in results) == 1, results
        assert sum(isinstance(r, NotAuthenticated) for r in results) == 1, results


JUNK_OBJECTS: list[dict[str, object]] = [
    {"expires_after": 5}, {"expires_after": []}, {"expires_after": "600"},
    {"expires_after": {"seconds": "600"}}, {"expires_after": {"seconds": True}},
    {"expires_after": {"seconds": 2**70}}, {"expires_after": {"seconds": -1}},
    {"expires_after": {"seconds": 1.5}}, {"session": 3}, {"session": []},
    {"voicemesh": 1}, {"voicemesh": {"single_use": "yes"}},
]  # fmt: skip
JUNK: list[bytes] = [
    b"[]", b"null", b'"text"', b"42", b"{", b"\xff\xfe\x00", b"[" * 100_000,
    *(json.dumps(body).encode() for body in JUNK_OBJECTS),
]  # fmt: skip


@pytest.mark.parametrize("body", JUNK, ids=[b[:40].decode("latin-1") for b in JUNK])
def test_junk_mint_request_is_a_400_with_a_reason(body: bytes) -> None:
    with TestClient(create_app(memory_services(settings=EdgeSettings(api_keys=(KEY,))))) as http:
        res = http.post("/v1/realtime/client_secrets", content=body, headers=AUTH)
        assert res.status_code == 400, res.text
        assert res.json()["error"]["message"]
        assert _mint(http)["value"].startswith("ek_")  # and the edge still mints


def test_minting_has_its_own_bucket_apart_from_connects() -> None:
    limits = replace(
        LimitSettings(), mint_rate_per_s=0.001, mint_burst=3, connect_rate_per_s=0.001, connect_burst=4
    )
    with TestClient(
        create_app(memory_services(settings=EdgeSettings(api_keys=(KEY,), limits=limits)))
    ) as http:
        secrets = [_mint(http)["value"] for _ in range(3)]
        refused = http.post("/v1/realtime/client_secrets", json={}, headers=AUTH)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"
        # Minting spent none of the connect bucket: four sessions still open.
        for token in [*secrets, KEY]:
            with http.websocket_connect("/v1/realtime", headers={"Authorization": f"Bearer {token}"}) as ws:
                assert ws.receive_json()["type"] == "session.created"
        with pytest.raises(WebSocketDisconnect) as limited:
            with http.websocket_connect("/v1/realtime", headers=AUTH) as ws:
                ws.receive_json()
        assert limited.value.code == 4429
