"""Stored API keys on one edge: the admin API (and its refusals), rotation, the policy a key and a
JWT carry (voices, rate), client secrets that carry their key's policy, ``rate_limits.updated``.

Fast tier: Litestar's test client drives the real app on in-memory stores; a scripted router,
energy VAD and tone voice (``edge.testing``) stand in for the models, which are not what is under
test. Keys shared by several edges through Redis: ``test_keys_shared.py``.
"""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from litestar.exceptions import WebSocketDisconnect
from litestar.testing import TestClient

from edge.app.asgi import create_app
from edge.app.services import EdgeServices
from edge.shared.settings import EdgeSettings
from edge.tenancy.client_secrets import digest
from edge.testing import memory_services

ADMIN = "admin-key-0123"
CALLER = "caller-key-0123"
JWT_SECRET = "jwt-secret-for-tests-0123456789abcdef"


def _services() -> EdgeServices:
    settings = EdgeSettings(api_keys=(CALLER,), admin_keys=(ADMIN,), jwt_secret=JWT_SECRET)
    return memory_services(settings=settings)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _create(http: TestClient[Any], **body: Any) -> dict[str, Any]:
    res = http.post("/v1/keys", json={"name": "test", **body}, headers=_bearer(ADMIN))
    assert res.status_code == 201, res.text
    created: dict[str, Any] = res.json()
    return created


def _until(ws: Any, type_: str) -> tuple[dict[str, Any], list[str]]:
    """The next event of ``type_``, and the types of every event read on the way."""
    seen: list[str] = []
    while True:
        event: dict[str, Any] = ws.receive_json()
        seen.append(event["type"])
        if event["type"] == type_:
            return event, seen


def _voice_update(voice: str) -> dict[str, Any]:
    return {"type": "session.update", "session": {"type": "realtime", "audio": {"output": {"voice": voice}}}}


def _token(**claims: Any) -> str:
    return jwt.encode({"sub": "tenant-1", "exp": int(time.time()) + 600, **claims}, JWT_SECRET, "HS256")


# -- the admin API ---------------------------------------------------------------------------------------


def test_a_created_key_opens_sessions_and_is_listed_without_its_secret() -> None:
    services = _services()
    with TestClient(create_app(services)) as http:
        created = _create(http, residency="eu, de", max_sessions=3, voices=["jf_alpha"], priority="high")
        secret = created["secret"]
        assert secret.startswith("vm_") and created["id"].startswith("key_")
        assert created["residency"] == ["de", "eu"] and created["max_sessions"] == 3
        with http.websocket_connect("/v1/realtime", headers=_bearer(secret)) as ws:
            assert ws.receive_json()["type"] == "session.created"
        listed = http.get("/v1/keys", headers=_bearer(ADMIN)).json()["data"]
        assert [k["id"] for k in listed] == [created["id"]]
        text = (
            http.get("/v1/keys", headers=_bearer(ADMIN)).text
            + http.get(f"/v1/keys/{created['id']}", headers=_bearer(ADMIN)).text
        )
        assert secret not in text and digest(secret) not in text and "sha256" not in text


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({}, "`name`"),
        ({"name": ""}, "`name`"),
        ({"name": "x" * 65}, "`name`"),
        ({"name": "a", "max_sessions": 0}, "`max_sessions`"),
        ({"name": "a", "max_sessions": 1.5}, "`max_sessions`"),
        ({"name": "a", "rate_per_s": "fast"}, "`rate_per_s`"),
        ({"name": "a", "burst": True}, "`burst`"),
        ({"name": "a", "residency": []}, "`residency`"),
        ({"name": "a", "voices": ["nobody-speaks-this"]}, "`voices`"),
        ({"name": "a", "priority": "urgent"}, "`priority`"),
        ({"name": "a", "on_no_region": "us"}, "`on_no_region`"),
        ({"name": "a", "admin": True}, "unknown field(s) admin"),
        ([1, 2], "JSON object"),
    ],
)
def test_a_bad_key_body_is_a_400_naming_the_field(body: object, reason: str) -> None:
    with TestClient(create_app(_services())) as http:
        res = http.post("/v1/keys", json=body, headers=_bearer(ADMIN))
        assert res.status_code == 400, res.text
        assert reason in res.json()["error"]["message"]
        assert http.get("/v1/keys", headers=_bearer(ADMIN)).json()["data"] == []  # nothing was made


def test_the_keys_api_wants_an_admin_and_a_known_id() -> None:
    with TestClient(create_app(_services())) as http:
        assert http.get("/v1/keys").status_code == 401
        refused = http.post("/v1/keys", json={"name": "a"}, headers=_bearer(CALLER))
        assert refused.status_code == 403 and "admin" in refused.json()["error"]["message"]
        secret = _create(http)["secret"]
        assert http.get("/v1/keys", headers=_bearer(secret)).status_code == 403  # a stored key is no admin
        for method, path in (("GET", "/v1/keys/key_nope"), ("POST", "/v1/keys/key_nope/rotate"),
                             ("DELETE", "/v1/keys/key_nope")):  # fmt: skip
            res = http.request(method, path, headers=_bearer(ADMIN))
            assert res.status_code == 404 and res.json()["error"]["code"] == "key_not_found", res.text
        bad = http.post(
            f"/v1/keys/{_create(http)['id']}/rotate", json={"grace_s": -1}, headers=_bearer(ADMIN)
        )
        assert bad.status_code == 400 and "`grace_s`" in bad.json()["error"]["message"]


def test_rotation_refuses_the_old_secret_at_once_or_after_its_grace() -> None:
    services = _services()
    with TestClient(create_app(services)) as http:
        key = _create(http)
        old = key["secret"]
        rotated = http.post(
            f"/v1/keys/{key['id']}/rotate", json={"grace_s": 600}, headers=_bearer(ADMIN)
        ).json()
        assert rotated["previous_secret_valid_until"] > time.time()
        for secret in (old, rotated["secret"]):  # both work during the grace period
            with http.websocket_connect("/v1/realtime", headers=_bearer(secret)) as ws:
                assert ws.receive_json()["type"] == "session.created"
        again = http.post(f"/v1/keys/{key['id']}/rotate", headers=_bearer(ADMIN)).json()  # no grace
        for refused in (old, rotated["secret"]):
            res = http.post("/v1/realtime/client_secrets", json={}, headers=_bearer(refused))
            assert res.status_code == 401 and "revoked or rotated" in res.json()["error"]["message"]
        with http.websocket_connect("/v1/realtime", headers=_bearer(again["secret"])) as ws:
            assert ws.receive_json()["type"] == "session.created"
        revoked = http.delete(f"/v1/keys/{key['id']}", headers=_bearer(ADMIN)).json()
        assert revoked["revoked_at"] is not None
        with pytest.raises(WebSocketDisconnect) as closed:
            with http.websocket_connect("/v1/realtime", headers=_bearer(again["secret"])) as ws:
                ws.receive_json()
        assert closed.value.code == 4401
        rotate_revoked = http.post(f"/v1/keys/{key['id']}/rotate", headers=_bearer(ADMIN))
        assert (
            rotate_revoked.status_code == 400 and rotate_revoked.json()["error"]["code"] == "api_key_revoked"
        )


# -- what a key's policy does in a session ---------------------------------------------------------------


def test_a_keys_voices_refuse_another_voice_with_an_error_naming_the_param() -> None:
    with TestClient(create_app(_services())) as http:
        secret = _create(http, voices=["jf_alpha", "marin"])["secret"]
        with http.websocket_connect("/v1/realtime", headers=_bearer(secret)) as ws:
            created, _ = _until(ws, "session.created")
            assert created["session"]["audio"]["output"]["voice"] == "jf_alpha"  # the key's, not the edge's
            ws.send_json({**_voice_update("jf_nezumi"), "event_id": "u1"})
            error, _ = _until(ws, "error")
            assert error["error"]["code"] == "voice_not_allowed"
            assert error["error"]["param"] == "session.audio.output.voice"
            assert error["error"]["event_id"] == "u1" and "'jf_alpha', 'marin'" in error["error"]["message"]
            ws.send_json({"type": "response.create", "response": {"audio": {"output": {"voice": "alloy"}}}})
            error, seen = _until(ws, "error")
            assert error["error"]["param"] == "response.audio.output.voice"
            assert "response.created" not in seen  # nothing started
            ws.send_json(_voice_update("marin"))
            updated, _ = _until(ws, "session.updated")
            assert updated["session"]["audio"]["output"]["voice"] == "marin"


def test_jwt_claims_become_the_policy_and_a_bad_claim_is_a_401_with_the_reason() -> None:
    with TestClient(create_app(_services())) as http:
        bad = http.post("/v1/realtime/client_secrets", json={}, headers=_bearer(_token(priority="urgent")))
        assert bad.status_code == 401
        assert bad.json()["error"]["message"].startswith("invalid JWT claim: `priority` must be one of")
        bad = http.post("/v1/realtime/client_secrets", json={}, headers=_bearer(_token(max_sessions=-2)))
        assert bad.status_code == 401 and "`max_sessions`" in bad.json()["error"]["message"]
        token = _token(voices="jf_nezumi", max_sessions=1, rate_per_s=0.5, burst=4)
        # The policy reaches the session (voices) and its limits (one session, a burst of 4)...
        with http.websocket_connect("/v1/realtime", headers=_bearer(token)) as ws:
            created, _ = _until(ws, "session.created")
            assert created["session"]["audio"]["output"]["voice"] == "jf_nezumi"
            limits, _ = _until(ws, "rate_limits.updated")  # a JWT with a rate of its own is told it
            assert limits["rate_limits"][0]["limit"] == 4
            with pytest.raises(WebSocketDisconnect) as refused:
                with http.websocket_connect("/v1/realtime", headers=_bearer(token)) as second:
                    second.receive_json()
            assert refused.value.code == 4429
        # ...and to a client secret minted with the JWT.
        secret = http.post("/v1/realtime/client_secrets", json={}, headers=_bearer(token)).json()["value"]
        with http.websocket_connect("/v1/realtime", headers=_bearer(secret)) as ws:
            ws.send_json(_voice_update("jf_alpha"))
            error, _ = _until(ws, "error")
            assert error["error"]["code"] == "voice_not_allowed"


def test_a_client_secret_carries_its_stored_keys_policy_and_dies_with_the_key() -> None:
    services = _services()
    with TestClient(create_app(services)) as http:
        key = _create(http, voices=["jf_tebukuro"])
        minted = http.post("/v1/realtime/client_secrets", json={}, headers=_bearer(key["secret"])).json()
        with http.websocket_connect("/v1/realtime", headers=_bearer(minted["value"])) as ws:
            created, _ = _until(ws, "session.created")
            assert created["session"]["audio"]["output"]["voice"] == "jf_tebukuro"
        assert http.delete(f"/v1/keys/{key['id']}", headers=_bearer(ADMIN)).status_code == 200
        with pytest.raises(WebSocketDisconnect) as refused:
            with http.websocket_connect("/v1/realtime", headers=_bearer(minted["value"])) as ws:
                ws.receive_json()
        assert refused.value.code == 4401


def test_rate_limits_updated_follows_session_created_and_each_response_done() -> None:
    with TestClient(create_app(_services())) as http:
        secret = _create(http, rate_per_s=0.001, burst=5)["secret"]
        with http.websocket_connect("/v1/realtime", headers=_bearer(secret)) as ws:
            assert ws.receive_json()["type"] == "session.created"
            first = ws.receive_json()  # at once: before anything else
            assert first["type"] == "rate_limits.updated"
            assert first["rate_limits"] == [{"name": "requests", "limit": 5, "remaining": 4,
                                             "reset_seconds": pytest.approx(1000, rel=0.01)}]  # fmt: skip
            for _ in range(2):
                ws.send_json({"type": "response.create"})
                _, seen = _until(ws, "response.done")
                assert "rate_limits.updated" not in seen
                after, _ = _until(ws, "rate_limits.updated")
                assert after["rate_limits"][0]["remaining"] == 4  # responses spend no connect token
        with http.websocket_connect("/v1/realtime", headers=_bearer(CALLER)) as ws:
            # An env key has the edge's limits: its clients' event sequence is as it always was.
            assert ws.receive_json()["type"] == "session.created"
            ws.send_json({"type": "response.create"})
            _, seen = _until(ws, "response.done")
            assert "rate_limits.updated" not in seen
