"""The OpenAI audio API's edge side, over a real socket with the stock openai SDK: request checks,
response formats, the headers and SSE events that say who spoke, the fallback voice, the error
shapes, and the metrics. The router and the voices are ``edge.testing`` stand-ins (a scripted
router, tones for Piper): the models are not under test here, the edge's handling of what they
send is. The same on real regions, Whisper, Kokoro, Piper and a SIGKILL is in
``tests/edge/test_audio_api_live.py`` and ``tests/edge/test_speech_failover_live.py``.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import openai
import pytest
import pytest_asyncio

from edge.app.server import EdgeTask
from edge.app.services import EdgeServices
from edge.shared.settings import EdgeSettings
from edge.speech.audio_encoding import wav_header
from edge.tenancy.auth import key_id
from edge.testing import ScriptedRouter, ToneVoice, clause, heard, memory_services
from router.api import ClientRefused, Degraded, Routed
from tests.fixtures.common import free_port
from wire.audio import REGION_OUT_RATE
from wire.turn import Segment, TextDelta, Transcript, TurnDone

KEY = "audio-key"
ADMIN = "audio-admin-key"
TEXT = "First of all. Then a second. And a third."


@dataclass
class Edge:
    client: openai.AsyncOpenAI
    http: str
    router: ScriptedRouter
    voice: ToneVoice
    services: EdgeServices


def spoken(*clauses: str, region: str = "r1", done: bool = True) -> list[object]:
    events: list[object] = [Routed(region=region), TextDelta(turn_id="t", delta=" ".join(clauses))]
    events += [clause(c, index=i) for i, c in enumerate(clauses)]
    return events + ([TurnDone(turn_id="t", region=region, status="completed")] if done else [])


@pytest_asyncio.fixture
async def edge_of() -> AsyncIterator[object]:
    running: list[EdgeTask] = []

    async def start(*scripts: list[object]) -> Edge:
        settings = EdgeSettings(
            port=free_port(), api_keys=(KEY,), admin_keys=(ADMIN,), models={"llm": "m-llm", "stt": "m-stt"}
        )
        router, voice = ScriptedRouter(*scripts), ToneVoice()  # type: ignore[arg-type]
        services = memory_services(router, fallback=voice, settings=settings)
        running.append(await EdgeTask.start(settings, router, services=services))
        http = f"http://127.0.0.1:{settings.port}"
        return Edge(
            openai.AsyncOpenAI(api_key=KEY, base_url=f"{http}/v1", max_retries=0),
            http,
            router,
            voice,
            services,
        )

    yield start
    for edge in running:
        await edge.aclose()


async def speak(edge: Edge, **params: object) -> tuple[httpx.Headers, bytes]:
    args: dict[str, object] = {"model": "tts-1", "voice": "alloy", "input": TEXT} | params
    async with edge.client.audio.speech.with_streaming_response.create(**args) as resp:  # type: ignore[arg-type]
        return resp.headers, b"".join([c async for c in resp.iter_bytes()])


def sse_events(body: bytes) -> list[dict[str, object]]:
    return [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]


async def test_speech_streams_each_clause_and_names_the_region(edge_of) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of(spoken("First of all.", "Then a second.", "And a third."))
    headers, pcm = await speak(edge, response_format="pcm")
    assert headers["content-type"] == "audio/pcm" and headers["x-voicemesh-region"] == "r1"
    assert "x-voicemesh-fallback" not in headers
    assert len(pcm) == 3 * int(0.1 * REGION_OUT_RATE) * 2  # three 100 ms clauses, untouched
    (turn,) = edge.router.turns
    assert turn.start.speak_text == TEXT and turn.start.voice == "jf_alpha"  # alloy, mapped
    assert turn.audio is None and turn.start.output_audio
    # Booked like a turn: the key's audit trail and usage (the audio it was sent).
    (record,) = await edge.services.accounting.audit.recent(key_id(KEY), 10)
    assert (record.kind, record.regions, record.outcome) == ("speech", ["r1"], "completed")
    usage = await edge.services.accounting.usage.totals(key_id(KEY))
    assert usage["turns"] == 1 and usage["audio_out_s"] == len(pcm) / 2 / REGION_OUT_RATE


async def test_wav_gets_a_streaming_header_and_sse_gets_openai_events(edge_of) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of(spoken("First of all.", "Then a second.", "And a third."))
    _, wav = await speak(edge, response_format="wav")
    assert wav.startswith(wav_header(REGION_OUT_RATE)) and len(wav) == 44 + 3 * 4800
    headers, body = await speak(edge, response_format="pcm", stream_format="sse")
    assert headers["content-type"].startswith("text/event-stream")
    events = sse_events(body)
    assert [e["type"] for e in events] == ["speech.audio.delta"] * 3 + ["speech.audio.done"]
    audio = b"".join(base64.b64decode(str(e["audio"])) for e in events[:-1])
    assert len(audio) == 3 * 4800
    assert events[-1]["voicemesh"] == {"regions": ["r1"], "fallback": None}


async def test_no_region_mid_stream_has_the_edge_voice_say_only_the_rest(edge_of) -> None:  # type: ignore[no-untyped-def]
    died = [*spoken("First of all.", done=False), Degraded(reason="all_regions_down")]
    edge = await edge_of(died)
    _, body = await speak(edge, response_format="pcm", stream_format="sse")
    assert edge.voice.spoken == ["Then a second.", "And a third."]  # not "First of all." again
    done = sse_events(body)[-1]
    assert done["voicemesh"] == {"regions": ["r1"], "fallback": "edge-voice"}
    (record,) = await edge.services.accounting.audit.recent(key_id(KEY), 10)
    assert (record.kind, record.outcome, record.reason) == ("speech", "degraded", "all_regions_down")


async def test_no_region_at_all_is_said_in_a_header(edge_of) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of([Degraded(reason="all_regions_down")])
    headers, mp3 = await speak(edge, response_format="mp3")
    assert headers["x-voicemesh-fallback"] == "edge-voice" and "x-voicemesh-region" not in headers
    assert headers["content-type"] == "audio/mpeg" and len(mp3) > 100
    assert edge.voice.spoken == ["First of all.", "Then a second.", "And a third."]


@pytest.mark.parametrize(
    ("params", "status", "code", "param"),
    [
        ({"voice": "nobody"}, 400, "invalid_value", "voice"),
        ({"input": "  "}, 400, "invalid_value", "input"),
        ({"input": "a" * 4097}, 400, "text_too_long", "input"),
        ({"response_format": "ogg"}, 400, "invalid_value", "response_format"),
        ({"speed": 5.0}, 400, "invalid_value", "speed"),
        ({"stream_format": "chunks"}, 400, "invalid_value", "stream_format"),
        ({"voice": {"id": "voice_123"}}, 400, "invalid_value", "voice"),
        ({"instructions": "x" * 5000}, 400, "text_too_long", "instructions"),
    ],
)
async def test_bad_speech_requests_get_4xx_with_the_reason(edge_of, params, status, code, param) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of(spoken("First of all."))
    with pytest.raises(openai.APIStatusError) as caught:
        await speak(edge, **params)
    exc = caught.value
    assert exc.status_code == status
    assert isinstance(exc.body, dict) and exc.body["code"] == code and exc.body["param"] == param
    assert str(exc.body["message"])  # a sentence saying why
    assert edge.router.turns == []  # refused before any region


async def test_a_request_a_region_refuses_is_a_400_and_a_bad_key_a_401(edge_of) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of([Routed(region="r1"), ClientRefused(code="text_too_long", message="too long")])
    with pytest.raises(openai.BadRequestError) as caught:
        await speak(edge)
    assert isinstance(caught.value.body, dict) and caught.value.body["code"] == "text_too_long"
    stranger = openai.AsyncOpenAI(api_key="nope", base_url=f"{edge.http}/v1", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        await stranger.models.list()


async def test_transcriptions_in_json_text_and_verbose_json(edge_of) -> None:  # type: ignore[no-untyped-def]
    segs = [Segment(start=0.0, end=1.2, text="hello there"), Segment(start=1.3, end=2.0, text="friend")]
    reply = heard("hello there friend")
    reply[1] = Transcript(turn_id="t", text="hello there friend", segments=segs)
    edge = await edge_of(reply)
    wav = wav_header(16_000, 32_000) + b"\x10\x00" * 16_000  # one second
    as_json = await edge.client.audio.transcriptions.create(model="whisper-1", file=("a.wav", wav))
    assert as_json.text == "hello there friend"
    as_text = await edge.client.audio.transcriptions.create(
        model="whisper-1", file=("a.wav", wav), response_format="text"
    )
    assert as_text.strip() == "hello there friend"
    verbose = await edge.client.audio.transcriptions.create(
        model="whisper-1", file=("a.wav", wav), response_format="verbose_json", language="en"
    )
    assert [(s.id, s.start, s.end, s.text) for s in verbose.segments or []] == [
        (0, 0.0, 1.2, "hello there"),
        (1, 1.3, 2.0, "friend"),
    ]
    assert verbose.duration == 1.0
    starts = [t.start for t in edge.router.turns]
    assert all(s.transcribe_only and s.language in ("", "en") for s in starts)
    assert all(t.audio is not None and len(t.audio) == 32_000 for t in edge.router.turns)  # 16 kHz PCM16
    # Booked like a Realtime transcription turn: the key's audit trail and usage.
    records = await edge.services.accounting.audit.recent(key_id(KEY), 10)
    assert [(r.kind, r.outcome, r.regions) for r in records] == [
        ("transcription", "completed", ["scripted"])
    ] * 3
    assert (await edge.services.accounting.usage.totals(key_id(KEY)))["audio_in_s"] == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("fields", "file", "param"),
    [
        ({}, ("a.wav", b"this is not audio at all" * 10), "file"),
        ({}, ("a.wav", wav_header(16_000, 0)), "file"),
        ({"response_format": "srt"}, None, "response_format"),
        ({"language": "english!"}, None, "language"),
        ({"temperature": 3}, None, "temperature"),
    ],
)
async def test_bad_transcription_requests_get_4xx_with_the_reason(edge_of, fields, file, param) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of(heard("unused"))
    good = ("a.wav", wav_header(16_000, 3200) + b"\x00\x00" * 1600)
    with pytest.raises(openai.BadRequestError) as caught:
        await edge.client.audio.transcriptions.create(model="whisper-1", file=file or good, **fields)
    assert isinstance(caught.value.body, dict) and caught.value.body["param"] == param
    assert edge.router.turns == []


async def test_no_region_for_a_transcription_is_a_503(edge_of) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of([Degraded(reason="all_regions_down")])
    wav = wav_header(16_000, 3200) + b"\x00\x00" * 1600
    with pytest.raises(openai.InternalServerError) as caught:
        await edge.client.audio.transcriptions.create(model="whisper-1", file=("a.wav", io.BytesIO(wav)))
    assert caught.value.status_code == 503 and "all_regions_down" in caught.value.message


async def test_models_lists_the_profile_models_and_metrics_count_requests(edge_of) -> None:  # type: ignore[no-untyped-def]
    edge = await edge_of(spoken("First of all."))
    models = await edge.client.models.list()
    assert [m.id for m in models.data] == ["voicemesh", "m-llm", "m-stt"]
    assert all(m.object == "model" and m.owned_by == "voicemesh" for m in models.data)
    await speak(edge, response_format="pcm")
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"{edge.http}/metrics", headers={"Authorization": f"Bearer {ADMIN}"})).text
    assert 'voicemesh_edge_audio_api_requests_total{endpoint="speech",outcome="ok"}' in text
    assert 'voicemesh_edge_speech_audio_seconds_total{served_by="r1"}' in text
