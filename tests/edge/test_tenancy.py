"""Tenants on the edge's whole path (issue 17): a key's residency (narrowed per session), its
``on_no_region`` rule, its priority class, the audit trail and the usage an admin reads back.

Fast tier: a real edge (uvicorn + Litestar, the stock openai client over a real socket) and the real
router, in front of two scripted stand-in regions (``router.testing``: no model is under test) on
loopback, one tagged ``eu`` and near, one tagged ``us`` and far. The ``eu`` one crashes mid-answer
(its connection dropped after its first clause, as a killed process's). The same with real regions
and a SIGKILL is ``tests/edge/test_tenancy_live.py``.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
import websockets
from prometheus_client import REGISTRY

from edge.app.server import EdgeTask
from edge.app.services import EdgeServices
from edge.shared.metrics import key_label
from edge.shared.settings import EdgeSettings
from edge.testing import ToneVoice, memory_services, tone
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from router.testing import Admit, Crash, Done, Hear, Say, ScriptedRegion, Step, speak
from tests.edge.conftest import session_id
from tests.fixtures.common import free_port
from tests.router.conftest import EDGE, FAR, NEAR
from voicemesh.realtime import client
from wire.turn import TurnStart

JWT_SECRET = "jwt-secret-for-the-tenancy-tests-0123456789"
ADMIN = "admin-key-tenancy-0123"
TURN_TIMEOUT_S = 30.0


def token(sub: str, **claims: object) -> str:
    return jwt.encode({"sub": sub, "exp": int(time.time()) + 600, **claims}, JWT_SECRET, algorithm="HS256")


def crashing(start: TurnStart) -> list[Step]:
    """Says its first clause, has more text ready, and dies before voicing it (a transcription turn
    is served whole)."""
    if start.transcribe_only:
        return [Admit(), Hear("what was said"), Done()]
    return [Admit(), Hear(), *speak("The first part."), Say("And then the rest. "), Crash()]


def healthy(_start: TurnStart) -> list[Step]:
    return [Admit(), Hear(), *speak("The rest, from far away."), Done()]


@dataclass
class Setup:
    url: str
    http: str
    eu: ScriptedRegion
    us: ScriptedRegion
    services: EdgeServices
    voice: ToneVoice

    def connect(self, tok: str, **query: str) -> Any:
        return client(self.url, tok).realtime.connect(model="m", extra_query=query)

    async def admin_get(self, path: str, tok: str = ADMIN) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.http) as http:
            return await http.get(path, headers={"Authorization": f"Bearer {tok}"})


@pytest_asyncio.fixture
async def setup() -> AsyncIterator[Setup]:
    async with ScriptedRegion("eu", crashing) as eu, ScriptedRegion("us", healthy) as us:
        registry = Registry(regions=[eu.record(NEAR, ["eu"]), us.record(FAR, ["us"])])
        router = Router(RouterSettings(location=EDGE, probe_interval_s=0), registry=registry)
        await router.start()
        settings = EdgeSettings(port=free_port(), admin_keys=(ADMIN,), jwt_secret=JWT_SECRET)
        voice = ToneVoice()  # the edge's fallback voice: Piper is not under test
        services = memory_services(router, settings=settings, fallback=voice)
        task = await EdgeTask.start(settings, router, services=services)
        try:
            base = f"127.0.0.1:{settings.port}"
            yield Setup(f"ws://{base}/v1", f"http://{base}", eu, us, services, voice)
        finally:
            await asyncio.wait_for(task.aclose(), 30)


async def ask(conn: Any, text: str = "Tell me something.") -> list[Any]:
    """One typed question; every event up to its ``response.done``."""
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    await conn.conversation.item.create(item=item)
    await conn.response.create()
    seen: list[Any] = []
    async with asyncio.timeout(TURN_TIMEOUT_S):
        async for event in conn:
            seen.append(event)
            if event.type == "response.done":
                return seen
    raise AssertionError(f"no response.done: {[e.type for e in seen]}")


def vendor(created: Any) -> dict[str, Any]:
    extra: dict[str, Any] = created.session.model_extra["voicemesh"]
    return extra


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_an_eu_key_whose_region_dies_gets_the_edge_voice_never_the_us_region(setup: Setup) -> None:
    before = counter("voicemesh_edge_key_turns_total", key=key_label("jwt_eu-voice"), outcome="degraded")
    async with setup.connect(token("eu-voice", residency=["eu"])) as conn:
        created = await conn.recv()
        assert vendor(created) == {"residency": ["eu"], "priority": "normal", "on_no_region": "edge_voice"}
        seen = await ask(conn)
    done = seen[-1].response
    assert done.status == "completed"
    assert done.metadata["served_by"] == "edge" and done.metadata["voicemesh_degraded"] == "true"
    assert setup.voice.spoken == ["And then the rest."]  # the unvoiced rest, in the edge's voice
    assert setup.us.starts == [], "a turn of an EU-only key reached the us region"
    assert not [e for e in seen if e.type == "voicemesh.turn.failed_over"]

    audit = await setup.admin_get("/v1/keys/jwt_eu-voice/audit")
    assert audit.status_code == 200, audit.text
    (turn,) = audit.json()["turns"]
    assert turn["response_id"] == done.id and turn["session_id"] == session_id(created)
    assert turn["regions"] == ["eu"] and turn["residency"] == ["eu"]
    assert turn["failovers"] == [{"from": "eu", "to": "edge", "reason": "region_disconnected"}]
    assert (turn["outcome"], turn["reason"]) == ("degraded", "no_region_available")

    usage = (await setup.admin_get("/v1/keys/jwt_eu-voice/usage")).json()["usage"]
    assert usage["turns"] == 1 and usage["audio_out_s"] > 0 and usage["output_tokens"] > 0
    after = counter("voicemesh_edge_key_turns_total", key=key_label("jwt_eu-voice"), outcome="degraded")
    assert after == before + 1


async def test_an_eu_key_that_says_error_gets_a_clear_error_and_no_audio_of_the_edge(setup: Setup) -> None:
    async with setup.connect(token("eu-error", residency="eu", on_no_region="error")) as conn:
        assert vendor(await conn.recv())["on_no_region"] == "error"
        seen = await ask(conn)
    (error,) = [e for e in seen if e.type == "error"]
    assert error.error.code == "no_region_in_residency" and "eu" in error.error.message
    assert error.error.type == "server_error"  # not the client's mistake
    done = seen[-1].response
    assert done.status == "failed" and done.status_details.error.code == "no_region_in_residency"
    assert done.status_details.error.type == "server_error"
    assert setup.voice.spoken == [] and "served_by" not in (done.metadata or {})
    assert setup.us.starts == []
    (turn,) = (await setup.admin_get("/v1/keys/jwt_eu-error/audit")).json()["turns"]
    assert turn["failovers"] == [{"from": "eu", "to": "none", "reason": "region_disconnected"}]
    assert (turn["outcome"], turn["reason"]) == ("failed", "no_region_in_residency")


async def test_an_unrestricted_key_fails_over_to_the_us_region(setup: Setup) -> None:
    async with setup.connect(token("anywhere", priority="high")) as conn:
        assert vendor(await conn.recv())["residency"] is None
        seen = await ask(conn)
    done = seen[-1].response
    assert done.status == "completed" and done.metadata["voicemesh_region"] == "us"
    assert [s.priority for s in (*setup.eu.starts, *setup.us.starts)] == ["high", "high"]  # its class
    (turn,) = (await setup.admin_get("/v1/keys/jwt_anywhere/audit")).json()["turns"]
    assert turn["regions"] == ["eu", "us"]
    assert turn["failovers"] == [{"from": "eu", "to": "us", "reason": "region_disconnected"}]
    assert (turn["outcome"], turn["reason"]) == ("completed", "")


async def test_a_session_narrows_its_keys_residency_and_keeps_it_on_resume(setup: Setup) -> None:
    tok = token("narrowing")  # unrestricted key
    async with setup.connect(tok, residency="eu") as conn:
        created = await conn.recv()
        assert vendor(created)["residency"] == ["eu"]
        seen = await ask(conn)
    assert seen[-1].response.metadata["served_by"] == "edge" and setup.us.starts == []
    async with setup.connect(tok, session_id=session_id(created)) as conn:
        assert vendor(await conn.recv())["residency"] == ["eu"]  # from the snapshot
        seen = await ask(conn, "And again?")
    assert seen[-1].response.metadata["served_by"] == "edge" and setup.us.starts == []


async def test_a_residency_outside_the_keys_is_refused_with_403_and_a_reason(setup: Setup) -> None:
    auth = {"Authorization": f"Bearer {token('eu-only', residency=['eu'])}"}
    with pytest.raises(websockets.InvalidStatus) as info:
        async with websockets.connect(f"{setup.url}/realtime?residency=eu,us", additional_headers=auth):
            pass
    assert info.value.response.status_code == 403
    assert b"residency_not_allowed" in info.value.response.body and b"us" in info.value.response.body
    with pytest.raises(websockets.InvalidStatus) as info:
        async with websockets.connect(f"{setup.url}/realtime?residency=", additional_headers=auth):
            pass
    assert info.value.response.status_code == 400  # not a list of tags


async def test_a_client_secret_carries_the_narrowing_it_was_minted_with(setup: Setup) -> None:
    async with httpx.AsyncClient(base_url=setup.http) as http:
        eu_only = {"Authorization": f"Bearer {token('eu-minter', residency=['eu'])}"}
        wider = await http.post(
            "/v1/realtime/client_secrets", json={"voicemesh": {"residency": ["us"]}}, headers=eu_only
        )
        assert wider.status_code == 403 and wider.json()["error"]["code"] == "residency_not_allowed"
        anywhere = {"Authorization": f"Bearer {token('minter')}"}
        minted = await http.post(
            "/v1/realtime/client_secrets", json={"voicemesh": {"residency": "eu"}}, headers=anywhere
        )
        assert minted.status_code == 200, minted.text
    async with setup.connect(minted.json()["value"]) as conn:
        assert vendor(await conn.recv())["residency"] == ["eu"]


async def test_the_books_are_for_admins_and_say_why_they_refuse(setup: Setup) -> None:
    caller = token("caller")
    refused = await setup.admin_get("/v1/keys/jwt_caller/audit", caller)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"
    assert (await setup.admin_get("/v1/keys/jwt_caller/usage", caller)).status_code == 403
    assert (await setup.admin_get("/v1/keys/jwt_caller/audit", "nonsense")).status_code == 401
    for bad in ("0", "-1", "x", "100000"):
        reply = await setup.admin_get(f"/v1/keys/jwt_caller/audit?limit={bad}")
        assert reply.status_code == 400 and "limit" in reply.json()["error"]["message"], bad
    empty = await setup.admin_get("/v1/keys/nobody/usage")
    assert empty.status_code == 200 and set(empty.json()["usage"].values()) == {0.0}


async def test_a_transcription_turn_is_routed_in_the_residency_and_booked(setup: Setup) -> None:
    async with setup.connect(token("eu-listener", residency=["eu"], priority="low")) as conn:
        await conn.recv()
        await conn.session.update(
            session={
                "type": "realtime",
                "audio": {"input": {"transcription": {"model": "whisper-1"}, "turn_detection": None}},
            }
        )
        await conn.input_audio_buffer.append(audio=base64.b64encode(tone(0.5)).decode())
        await conn.input_audio_buffer.commit()
        async with asyncio.timeout(TURN_TIMEOUT_S):
            async for event in conn:
                if event.type == "conversation.item.input_audio_transcription.completed":
                    assert event.transcript == "what was said"
                    break
    (start,) = setup.eu.starts
    assert start.transcribe_only and start.priority == "low" and setup.us.starts == []
    (turn,) = (await setup.admin_get("/v1/keys/jwt_eu-listener/audit")).json()["turns"]
    assert (turn["kind"], turn["regions"], turn["outcome"]) == ("transcription", ["eu"], "completed")
    assert turn["response_id"] is None
    usage = (await setup.admin_get("/v1/keys/jwt_eu-listener/usage")).json()["usage"]
    assert usage["turns"] == 1 and usage["audio_in_s"] == 0.5  # 0.5 s of user audio, at 16 kHz
