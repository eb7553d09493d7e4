"""Custom voices (``POST /v1/voices``) and the speech cache, on the edge's side: a real edge on a
real socket driven by the stock openai SDK (its generic ``post``/``get``/``delete`` for
``/v1/voices``, ``audio.speech`` and ``realtime`` for the rest), with a scripted router standing in
for the regions: which definition a turn carries, and which requests reach a region at all, is
under test here, not Kokoro. Two edges on one real ``redis-server`` share voices and cached audio.
Kokoro blending a style: ``tests/region/test_custom_voices.py``; a SIGKILL mid-speech with a
custom voice on real regions: ``tests/edge/test_custom_voices_live.py``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np
import openai
import pytest
import pytest_asyncio

from edge.app.server import EdgeTask
from edge.app.services import EdgeServices
from edge.shared.settings import EdgeSettings, SpeechCacheSettings
from edge.tenancy.auth import key_id
from edge.testing import ScriptedRouter, ToneVoice, clause, memory_services, text_reply
from router.api import Degraded, Routed
from tests.fixtures.common import free_port
from voicemesh.realtime import client as realtime_client
from wire.turn import TextDelta, TurnDone
from wire.voices import STYLE_SHAPE, CustomVoice, encode_style

KEY, OTHER, ADMIN = "voices-key-a", "voices-key-b", "voices-admin-key"
TEXT = "First of all. Then a second."


def spoken(region: str = "r1", *, done: bool = True) -> list[object]:
    events: list[object] = [Routed(region=region), TextDelta(turn_id="t", delta=TEXT)]
    events += [clause("First of all.", index=0), clause("Then a second.", index=1)]
    return events + ([TurnDone(turn_id="t", region=region, status="completed")] if done else [])


@dataclass
class Edge:
    http: str
    router: ScriptedRouter
    services: EdgeServices

    def sdk(self, key: str = KEY) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=key, base_url=f"{self.http}/v1", max_retries=0)

    async def metric(self, name: str, **labels: str) -> float:
        async with httpx.AsyncClient() as http:
            text = (await http.get(f"{self.http}/metrics", headers={"Authorization": f"Bearer {ADMIN}"})).text
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        m = re.search(rf"^{name}(?:\{{{want}\}})? (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0


@pytest_asyncio.fixture
async def edge_of() -> AsyncIterator[Any]:
    running: list[EdgeTask] = []

    async def start(*scripts: list[object], **settings: Any) -> Edge:
        s = EdgeSettings(port=free_port(), api_keys=(KEY, OTHER), admin_keys=(ADMIN,), **settings)
        router = ScriptedRouter(*(scripts or (spoken(),)))  # type: ignore[arg-type]
        services = memory_services(router, fallback=ToneVoice(), settings=s)
        running.append(await EdgeTask.start(s, router, services=services))
        return Edge(f"http://127.0.0.1:{s.port}", router, services)

    yield start
    for edge in running:
        await edge.aclose()


async def make(edge: Edge, body: dict[str, Any], key: str = KEY) -> dict[str, Any]:
    return await edge.sdk(key).post("/voices", body=body, cast_to=dict[str, Any])  # type: ignore[no-any-return]


async def speak(edge: Edge, key: str = KEY, **params: Any) -> tuple[httpx.Headers, bytes]:
    args: dict[str, Any] = {"model": "tts-1", "voice": "alloy", "input": TEXT, "response_format": "pcm"}
    async with edge.sdk(key).audio.speech.with_streaming_response.create(**(args | params)) as resp:
        return resp.headers, b"".join([c async for c in resp.iter_bytes()])


STYLE = encode_style(np.linspace(-1, 1, 510 * 256, dtype=np.float32).reshape(STYLE_SHAPE))


async def test_voices_crud_with_the_stock_sdk(edge_of: Any) -> None:
    edge = await edge_of()
    sdk = edge.sdk()
    made = await make(edge, {"name": "narrator", "blend": {"alloy": 0.7, "jm_kumo": 0.2, "jf_alpha": 0.1}})
    # An OpenAI name counts as its region voice (alloy -> jf_alpha): weights merged and scaled to 1.
    assert made["id"].startswith("voice_") and made["name"] == "narrator" and made["kind"] == "blend"
    assert made["blend"] == pytest.approx({"jf_alpha": 0.8, "jm_kumo": 0.2})
    assert (made["owner"], made["shared"]) == (key_id(KEY), False)
    uploaded = await make(edge, {"name": "mine", "style": STYLE})
    assert uploaded["kind"] == "style" and "style" not in uploaded  # never echoed: it is large
    assert await sdk.get(f"/voices/{made['id']}", cast_to=dict[str, Any]) == made
    listed = await sdk.get("/voices", cast_to=dict[str, Any])
    assert [v["id"] for v in listed["data"]] == [made["id"], uploaded["id"]]
    gone = await sdk.delete(f"/voices/{made['id']}", cast_to=dict[str, Any])
    assert gone == {"id": made["id"], "object": "voice.deleted", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        await sdk.get(f"/voices/{made['id']}", cast_to=dict[str, Any])
    assert [v["id"] for v in (await sdk.get("/voices", cast_to=dict[str, Any]))["data"]] == [uploaded["id"]]


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"name": "x y", "blend": {"alloy": 1}}, "name", "invalid_value"),
        ({"name": "alloy", "blend": {"jm_kumo": 1}}, "name", "invalid_value"),  # a built-in name
        ({"name": "v"}, "blend", "invalid_value"),  # neither
        ({"name": "v", "blend": {"alloy": 1}, "style": STYLE}, "blend", "invalid_value"),  # both
        ({"name": "v", "blend": {"af_nobody": 1}}, "blend", "invalid_value"),
        ({"name": "v", "blend": {"alloy": -1}}, "blend", "invalid_value"),
        ({"name": "v", "blend": {}}, "blend", "invalid_value"),
        ({"name": "v", "blend": {"alloy": "lots"}}, "blend", "invalid_value"),
        ({"name": "v", "style": "not base64!"}, "style", "invalid_value"),
        ({"name": "v", "style": STYLE[:400]}, "style", "invalid_value"),
        ({"name": "v", "style": encode_style(np.full(STYLE_SHAPE, np.inf))}, "style", "invalid_value"),
        ({"name": "v", "blend": {"alloy": 1}, "colour": "red"}, "colour", "invalid_value"),
    ],
)
async def test_bad_voice_bodies_get_a_400_naming_the_field(
    edge_of: Any, body: dict[str, Any], param: str, code: str
) -> None:
    edge = await edge_of()
    with pytest.raises(openai.BadRequestError) as caught:
        await make(edge, body)
    assert isinstance(caught.value.body, dict), caught.value
    assert (caught.value.body["param"], caught.value.body["code"]) == (param, code), caught.value.body
    assert (await edge.sdk().get("/voices", cast_to=dict[str, Any]))["data"] == []  # nothing stored


async def test_a_key_sees_its_own_voices_and_the_shared_ones(edge_of: Any) -> None:
    edge = await edge_of()
    private = await make(edge, {"name": "private", "blend": {"jm_kumo": 1}})
    with pytest.raises(openai.PermissionDeniedError):  # sharing is an admin's decision
        await make(edge, {"name": "for-all", "blend": {"jm_kumo": 1}, "shared": True})
    shared = await make(edge, {"name": "house", "blend": {"jf_nezumi": 1}, "shared": True}, key=ADMIN)
    other = edge.sdk(OTHER)
    assert [v["id"] for v in (await other.get("/voices", cast_to=dict[str, Any]))["data"]] == [shared["id"]]
    with pytest.raises(openai.NotFoundError):
        await other.get(f"/voices/{private['id']}", cast_to=dict[str, Any])
    with pytest.raises(openai.NotFoundError):
        await other.delete(f"/voices/{private['id']}", cast_to=dict[str, Any])
    with pytest.raises(openai.BadRequestError) as caught:  # not B's to speak with, by id or by name
        await speak(edge, OTHER, voice={"id": private["id"]})
    assert isinstance(caught.value.body, dict) and caught.value.body["param"] == "voice"
    with pytest.raises(openai.BadRequestError):
        await speak(edge, OTHER, voice="private")
    with pytest.raises(openai.PermissionDeniedError):  # a shared voice is deleted by an admin
        await other.delete(f"/voices/{shared['id']}", cast_to=dict[str, Any])
    with pytest.raises(openai.BadRequestError) as caught:  # one name, one voice, for whoever sees it
        await make(edge, {"name": "house", "blend": {"jm_kumo": 1}})
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "voice_name_taken"
    await speak(edge, OTHER, voice="house")
    assert edge.router.turns[-1].start.custom_voice == CustomVoice(id=shared["id"], blend={"jf_nezumi": 1.0})
    await edge.sdk(ADMIN).delete(f"/voices/{private['id']}", cast_to=dict[str, Any])  # an admin may
    assert [v["id"] for v in (await edge.sdk().get("/voices", cast_to=dict[str, Any]))["data"]] == [
        shared["id"]
    ]


async def test_speech_with_a_custom_voice_carries_its_definition_in_the_turn(edge_of: Any) -> None:
    edge = await edge_of()
    blend = await make(edge, {"name": "narrator", "blend": {"alloy": 0.7, "jm_kumo": 0.3}})
    upload = await make(edge, {"name": "uploaded", "style": STYLE})
    headers, pcm = await speak(edge, voice={"id": blend["id"]})
    assert headers["x-voicemesh-region"] == "r1" and len(pcm) > 0
    await speak(edge, voice="narrator", speed=1.5)  # by name: the same voice
    await speak(edge, voice={"id": upload["id"]})
    starts = [t.start for t in edge.router.turns]
    want = CustomVoice(id=blend["id"], blend={"jf_alpha": 0.7, "jm_kumo": 0.3})
    assert starts[0].custom_voice == starts[1].custom_voice == want
    assert starts[0].voice == "" and starts[1].speed == 1.5
    assert starts[2].custom_voice == CustomVoice(id=upload["id"], style=STYLE)  # the whole vector


async def test_a_realtime_session_speaks_with_a_custom_voice(edge_of: Any) -> None:
    edge = await edge_of(text_reply("Hello there."))
    made = await make(edge, {"name": "narrator", "blend": {"alloy": 0.5, "jm_kumo": 0.5}})
    url = edge.http.replace("http://", "ws://") + "/v1"
    async with realtime_client(url, KEY).realtime.connect(model="voicemesh") as conn:
        assert (await conn.recv()).type == "session.created"
        await conn.session.update(
            session={"type": "realtime", "audio": {"output": {"voice": {"id": "voice_nope"}}}}
        )
        error = await conn.recv()
        assert error.type == "error" and error.error.param == "session.audio.output.voice", error
        await conn.session.update(
            session={"type": "realtime", "audio": {"output": {"voice": {"id": made["id"]}}}}
        )
        updated = await conn.recv()
        assert updated.type == "session.updated", updated
        await conn.conversation.item.create(
            item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi?"}]}
        )
        await conn.response.create()
        async for event in conn:
            if event.type == "response.done":
                break
    (turn,) = edge.router.turns
    assert turn.start.custom_voice == CustomVoice(id=made["id"], blend={"jf_alpha": 0.5, "jm_kumo": 0.5})


async def test_a_key_restricted_to_some_voices_uses_only_custom_voices_of_those(edge_of: Any) -> None:
    edge = await edge_of()
    admin = edge.sdk(ADMIN)
    key = await admin.post("/keys", body={"name": "narrow", "voices": ["alloy"]}, cast_to=dict[str, Any])
    narrow = key["secret"]
    mine = await make(edge, {"name": "alloyish", "blend": {"alloy": 1, "jf_alpha": 1}}, key=narrow)
    for body, param in (
        ({"name": "kumo", "blend": {"jm_kumo": 1}}, "blend"),
        ({"name": "up", "style": STYLE}, "style"),
    ):
        with pytest.raises(openai.BadRequestError) as caught:
            await make(edge, body, key=narrow)
        assert isinstance(caught.value.body, dict)
        assert (caught.value.body["code"], caught.value.body["param"]) == ("voice_not_allowed", param)
    kumo = await make(edge, {"name": "house-kumo", "blend": {"jm_kumo": 1}, "shared": True}, key=ADMIN)
    with pytest.raises(openai.BadRequestError) as caught:
        await speak(edge, narrow, voice={"id": kumo["id"]})
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "voice_not_allowed"
    await speak(edge, narrow, voice={"id": mine["id"]})
    assert edge.router.turns[-1].start.custom_voice == CustomVoice(id=mine["id"], blend={"jf_alpha": 1.0})
    # Listing a custom voice's id in the key's `voices` allows it.
    wide = await admin.post(
        "/keys", body={"name": "w", "voices": ["alloy", kumo["id"]]}, cast_to=dict[str, Any]
    )
    await speak(edge, wide["secret"], voice={"id": kumo["id"]})
    assert edge.router.turns[-1].start.custom_voice == CustomVoice(id=kumo["id"], blend={"jm_kumo": 1.0})


# -- the speech cache ---------------------------------------------------------------------------------


async def test_a_repeated_request_is_served_from_the_cache_without_a_router_turn(edge_of: Any) -> None:
    edge = await edge_of()
    hits = await edge.metric("voicemesh_edge_speech_cache_lookups_total", result="hit")
    misses = await edge.metric("voicemesh_edge_speech_cache_lookups_total", result="miss")
    first_headers, first = await speak(edge, response_format="wav")
    once = (await edge.services.accounting.usage.totals(key_id(KEY)))["audio_out_s"]
    again_headers, again = await speak(edge, response_format="wav")
    assert first_headers["x-voicemesh-cache"] == "miss" and again_headers["x-voicemesh-cache"] == "hit"
    assert again == first and len(edge.router.turns) == 1  # no second turn: nothing synthesised
    assert again_headers["x-voicemesh-region"] == "r1"  # the region that made it
    async with edge.sdk().audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="wav", stream_format="sse"
    ) as resp:
        assert resp.headers["x-voicemesh-cache"] == "hit"
        body = b"".join([c async for c in resp.iter_bytes()])
    assert b'"cache": "hit"' in body and len(edge.router.turns) == 1
    # Every hit is booked: no region, the audio it returned (the miss's region audio, again).
    records = await edge.services.accounting.audit.recent(key_id(KEY), 10)
    assert sorted((r.cache_hit, tuple(r.regions)) for r in records) == [
        (False, ("r1",)),
        (True, ()),
        (True, ()),
    ]
    usage = await edge.services.accounting.usage.totals(key_id(KEY))
    assert once > 0 and usage["turns"] == 3 and usage["audio_out_s"] == pytest.approx(3 * once)
    # Anything that changes the sound is another entry: the speed, the format, the voice.
    for params in ({"speed": 1.25}, {"response_format": "pcm"}, {"voice": "ash"}):
        headers, _ = await speak(edge, response_format=params.pop("response_format", "wav"), **params)
        assert headers["x-voicemesh-cache"] == "miss", params
    assert len(edge.router.turns) == 4
    assert await edge.metric("voicemesh_edge_speech_cache_lookups_total", result="hit") == hits + 2
    assert await edge.metric("voicemesh_edge_speech_cache_lookups_total", result="miss") == misses + 4


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ([*spoken(done=False), Degraded(reason="all_regions_down")], "the fallback voice finished it"),
        ([Degraded(reason="all_regions_down")], "the fallback voice read it all"),
        ([Routed(region="r1"), clause("First of all.")], "cut: the region never said it was done"),
        ([*spoken()[:-1], TurnDone(turn_id="t", region="r1", status="failed")], "a failed turn"),
    ],
)
async def test_only_complete_region_served_results_are_cached(
    edge_of: Any, script: list[object], why: str
) -> None:
    edge = await edge_of(script)
    await speak(edge)
    headers, _ = await speak(edge)
    assert headers["x-voicemesh-cache"] == "miss", why
    assert len(edge.router.turns) == 2, why


async def test_an_entry_past_the_size_cap_is_not_stored(edge_of: Any) -> None:
    edge = await edge_of(speech_cache=SpeechCacheSettings(max_entry_bytes=1000))
    await speak(edge)  # two 100 ms clauses: 9,600 bytes of PCM
    headers, _ = await speak(edge)
    assert headers["x-voicemesh-cache"] == "miss" and len(edge.router.turns) == 2


async def test_the_cache_keys_by_residency_and_by_the_voice_definition(edge_of: Any) -> None:
    edge = await edge_of()
    admin = edge.sdk(ADMIN)
    eu = (await admin.post("/keys", body={"name": "eu", "residency": ["eu"]}, cast_to=dict[str, Any]))[
        "secret"
    ]
    await speak(edge)
    headers, _ = await speak(edge, eu)  # made anywhere: not for a key that must stay in the eu
    assert headers["x-voicemesh-cache"] == "miss"
    assert (await speak(edge, eu))[0]["x-voicemesh-cache"] == "hit"
    v1 = await make(edge, {"name": "v1", "blend": {"jm_kumo": 1}})
    await speak(edge, voice="v1")
    await edge.sdk().delete(f"/voices/{v1['id']}", cast_to=dict[str, Any])
    await make(edge, {"name": "v1", "blend": {"jm_kumo": 1, "alloy": 1}})  # same name, another sound
    assert (await speak(edge, voice="v1"))[0]["x-voicemesh-cache"] == "miss"
    assert (await speak(edge, voice="v1"))[0]["x-voicemesh-cache"] == "hit"
    assert len(edge.router.turns) == 4


async def test_two_edges_on_one_redis_share_voices_and_cached_audio(edge_of: Any, redis_url: str) -> None:
    one = await edge_of(store_url=redis_url)
    two = await edge_of(store_url=redis_url)
    made = await make(one, {"name": f"shared-{free_port()}", "blend": {"jf_gongitsune": 1}})
    assert (await two.sdk().get(f"/voices/{made['id']}", cast_to=dict[str, Any]))["id"] == made["id"]
    text = f"Said once on edge one, number {free_port()}."
    await speak(one, voice={"id": made["id"]}, input=text)
    headers, _ = await speak(two, voice={"id": made["id"]}, input=text)
    assert headers["x-voicemesh-cache"] == "hit" and two.router.turns == []
    await two.sdk().delete(f"/voices/{made['id']}", cast_to=dict[str, Any])
    with pytest.raises(openai.NotFoundError):
        await one.sdk().get(f"/voices/{made['id']}", cast_to=dict[str, Any])
