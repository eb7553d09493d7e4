"""Phone calls through Twilio Media Streams (``edge/app/twilio/``): a client speaking Twilio's
messages, signed as Twilio signs them, places a call on a real edge (uvicorn on loopback) and gets
the answer back as 20 ms mu-law ``media`` with its ``streamSid``, a ``mark`` per clause, and a
``clear`` when it talks over the answer. Unsigned or badly signed streams are refused before
anything starts; bad messages are ignored; a call's parameters cannot exceed its key's rights.

Fast tier: the real app on stand-ins (``edge.testing``: ``EnergyVad`` for Silero, a
``ScriptedRouter`` for the regions): the phone bridge is what is under test, not a model. Twilio
itself cannot run here: ``voicemesh/twilio_client.py`` plays it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import jwt
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from edge.app.server import EdgeTask
from edge.app.services import EdgeServices
from edge.app.twilio import messages
from edge.app.twilio.media_stream import PATH
from edge.realtime.session import RealtimeSession
from edge.shared.settings import BackchannelSettings, EdgeSettings, TwilioSettings, VadSettings
from edge.tenancy.auth import key_id
from edge.testing import ScriptedRouter, ScriptStep, clause, memory_services, spoken_reply
from edge.testing.audio import silence, tone
from router.api import Routed
from tests.fixtures.common import free_port, in_own_loop
from voicemesh.twilio_client import TwilioCall, energy, place_call, sign, to_mulaw
from wire.audio import CLIENT_RATE, pcm16_to_float
from wire.turn import TextDelta, TurnDone

KEY = "phone-key-0123"
BAD_MEDIA = '{"event": "media", "media": {"payload": "!!notbase64!!"}}'
TOKEN = "twilio-auth-token-0123456789abcdef"
JWT_SECRET = "jwt-secret-for-phone-tests-0123456789"


def _speech(seconds: float = 0.6) -> bytes:
    """Silence, a tone (speech to ``EnergyVad``), then the silence that ends the turn: as mu-law."""
    pcm = silence(0.3) + tone(seconds) + silence(0.8)
    return to_mulaw(pcm16_to_float(pcm), CLIENT_RATE)


def _long_reply(clauses: int = 8, seconds: float = 0.5) -> list[ScriptStep]:
    events: list[ScriptStep] = [Routed(region="scripted")]
    for i in range(clauses):
        events += [
            TextDelta(turn_id="turn", delta=f"Part {i}. "),
            clause(f"Part {i}.", index=i, seconds=seconds),
        ]
    text = " ".join(f"Part {i}." for i in range(clauses))
    return [*events, TurnDone(turn_id="turn", region="scripted", status="completed", text=text)]


@asynccontextmanager
async def _edge(
    router: ScriptedRouter | None = None, *, twilio: TwilioSettings | None = None, backchannel: bool = True
) -> AsyncIterator[tuple[str, EdgeServices]]:
    settings = EdgeSettings(
        api_keys=(KEY,), port=free_port(), jwt_secret=JWT_SECRET,
        twilio=twilio or TwilioSettings(auth_token=TOKEN, api_key=KEY, public_url=None),
        vad=VadSettings(backchannel=BackchannelSettings(enabled=backchannel)),
    )  # fmt: skip
    services = memory_services(
        router or ScriptedRouter(spoken_reply("Hello there. How are you?")), settings=settings
    )
    edge = await EdgeTask.start(settings, services.router, services=services)
    try:
        yield f"ws://127.0.0.1:{settings.port}", services
    finally:
        await edge.aclose()


def _done_marks(call: TwilioCall) -> int:
    return sum(name.startswith("done:") for _, name in call.received.marks)


async def test_call_is_answered_in_mulaw_with_its_stream_sid() -> None:
    router = ScriptedRouter(spoken_reply("Hello there. How are you?"))
    async with _edge(router) as (url, services):
        async with place_call(url, TOKEN, parameters={"instructions": "Be brief."}) as call:
            await call.send_mulaw(_speech(), pace=0)
            await call.wait_until(lambda: _done_marks(call) >= 1)
            session = next(iter(services.sessions.live.values()))
            assert isinstance(session, RealtimeSession)
            assert (session.state.input_audio_format, session.state.output_audio_format) == (
                "audio/pcmu",
                "audio/pcmu",
            )
            assert session.state.instructions == "Be brief."
            assert session.state.key_id == key_id(KEY)  # VOICEMESH_TWILIO_API_KEY's tenant
            await call.wait_until(lambda: len(call.received.echoed) == len(call.received.marks))
            await call.stop()
            await call.wait_until(lambda: services.open_sessions == 0)
    received = call.received
    assert received.stream_sids == {call.stream_sid}
    assert received.other == []  # nothing Twilio would refuse
    assert received.clears == []
    assert all(len(chunk) == messages.FRAME_BYTES for _, chunk in received.media)
    # Two clauses of 0.1 s of a tone: about 0.2 s of loud mu-law, whole 20 ms frames.
    assert 0.18 <= len(received.audio()) / messages.RATE <= 0.26, len(received.audio())
    assert energy(received.audio()) > 0.1
    # A mark after each clause, then one at the end of the answer; each echoed once played.
    names = [name for _, name in received.marks]
    assert [n.split(":")[0] for n in names] == ["clause", "clause", "done"], names
    assert received.echoed == names
    assert len(router.turns) == 1 and router.turns[0].start.instructions.startswith("Be brief.")


async def test_talking_over_the_answer_clears_twilio_and_keeps_what_was_heard() -> None:
    router = ScriptedRouter(_long_reply())
    # A barge-in at once (the edge's setting off): speech over the answer is not first held to
    # tell a backchannel, during which Twilio would play out what it holds.
    async with _edge(router, backchannel=False) as (url, services):
        async with place_call(url, TOKEN) as call:
            await call.send_mulaw(_speech(), pace=0)
            await call.wait_until(lambda: len(call.received.echoed) >= 2)  # two clauses played
            session = next(iter(services.sessions.live.values()))
            assert isinstance(session, RealtimeSession)
            await call.send_mulaw(to_mulaw(pcm16_to_float(tone(0.4)), CLIENT_RATE), pace=1.0)
            await call.wait_until(lambda: len(call.received.clears) == 1)
            await call.send_silence(0.2)  # (the truncate rides on the next frames)
            await call.wait_until(lambda: session.responses.response is None)
            items = [i for i in session.conversation.items if i.role == "assistant"]
            await call.stop()
    clear_at = call.received.clears[0]
    late = [t for t, _ in call.received.media if t > clear_at]
    assert len(call.received.audio()) < 8 * 0.5 * messages.RATE  # the answer was cut short
    assert len(late) <= 10, late  # at most the deltas already on their way (100 ms each)
    assert items[0].status == "incomplete"  # the answer was cancelled, not completed
    # The history holds the clauses Twilio said it played, never the ones it dropped.
    assert len(items) == 1 and items[0].text is not None
    played = [n for n in call.received.echoed if n not in call.received.dropped]
    assert len(played) >= 2 and call.received.dropped  # (what the test set up)
    heard = len(items[0].text.split()) // 2  # "Part 0. Part 1." is two clauses
    # (a mark echoed while the clear was on its way may count as dropped at the edge)
    assert len(played) - 1 <= heard <= len(played), (items[0].text, played, call.received.dropped)


@pytest.mark.parametrize("signature", ["", "bad", "signed with another token"])
async def test_unsigned_or_badly_signed_stream_is_refused_and_nothing_starts(signature: str) -> None:
    router = ScriptedRouter(spoken_reply("Hi."))
    async with _edge(router) as (url, services):
        if signature == "signed with another token":
            signature = sign("another-token", f"wss://{url.split('://')[1]}{PATH}")
        with pytest.raises(InvalidStatus) as refused:
            async with place_call(url, TOKEN, signature=signature):
                pass
        assert services.open_sessions == 0 and not services.sessions.live and not router.turns
    assert refused.value.response.status_code == 403
    code = json.loads(refused.value.response.body or b"{}")["error"]["code"]
    assert code == ("twilio_signature_missing" if signature == "" else "twilio_signature_invalid")


async def test_stream_signed_for_another_url_is_refused() -> None:
    async with _edge() as (url, _services):
        with pytest.raises(InvalidStatus) as refused:
            async with place_call(url, TOKEN, public_url="wss://elsewhere.example.com"):
                pass
    assert refused.value.response.status_code == 403


async def test_behind_a_proxy_the_public_url_is_what_twilio_signed() -> None:
    public = TwilioSettings(auth_token=TOKEN, api_key=KEY, public_url="https://voice.example.com/edge")
    async with _edge(twilio=public) as (url, _services):
        async with place_call(url, TOKEN, public_url="wss://voice.example.com/edge") as call:
            await call.send_mulaw(_speech(), pace=0)
            await call.wait_until(lambda: _done_marks(call) >= 1)
            await call.stop()
        with pytest.raises(InvalidStatus) as refused:  # signed for the address the edge sees
            async with place_call(url, TOKEN):
                pass
        form = {"CallSid": "CA123"}
        async with httpx.AsyncClient() as http:
            signed = sign(TOKEN, "https://voice.example.com/edge/v1/twilio/voice", form)
            answer = await http.post(
                url.replace("ws://", "http://") + "/v1/twilio/voice",
                data=form,
                headers={"X-Twilio-Signature": signed},
            )
    assert energy(call.received.audio()) > 0.1
    assert refused.value.response.status_code == 403
    assert answer.status_code == 200, answer.text
    assert '<Stream url="wss://voice.example.com/edge/v1/twilio/media-stream"' in answer.text


async def test_endpoint_is_off_without_an_auth_token() -> None:
    async with _edge(twilio=TwilioSettings(auth_token=None, api_key=KEY)) as (url, _services):
        with pytest.raises(InvalidStatus) as refused:
            async with place_call(url, TOKEN):
                pass
    assert refused.value.response.status_code == 404  # off: nothing to retry
    error = json.loads(refused.value.response.body or b"{}")["error"]
    assert error["code"] == "twilio_not_configured" and "VOICEMESH_TWILIO_AUTH_TOKEN" in error["message"]


async def test_bad_messages_are_ignored_and_the_call_goes_on() -> None:
    async with _edge() as (url, services):
        async with place_call(url, TOKEN) as call:
            for bad in ["not json", "[1, 2]", '{"no": "event"}', '{"event": "media"}', BAD_MEDIA,
                        '{"event": "mark", "mark": {}}', '{"event": "something_new"}']:  # fmt: skip
                await call.ws.send(bad)
            await call.ws.send(b"\x00\x01binary")
            await call.ws.send(
                json.dumps({"event": "dtmf", "streamSid": call.stream_sid, "dtmf": {"digit": "5"}})
            )
            await call.send_mulaw(_speech(), pace=0)
            await call.wait_until(lambda: _done_marks(call) >= 1)
            await call.stop()
            await call.wait_until(lambda: services.open_sessions == 0)
    assert energy(call.received.audio()) > 0.1 and call.received.other == []


async def test_a_stream_that_does_not_start_as_twilios_is_closed_saying_why() -> None:
    async with _edge() as (url, services):
        host = url.split("://")[1]
        headers = {"X-Twilio-Signature": sign(TOKEN, f"wss://{host}{PATH}")}
        async with connect(f"{url}{PATH}", additional_headers=headers) as ws:
            await ws.send(messages.connected())
            await ws.send("not json")
            async with asyncio.timeout(10):
                await ws.wait_closed()
        assert (ws.close_code, ws.close_reason) == (1008, "twilio_bad_start")
        assert services.open_sessions == 0


async def test_a_parameter_cannot_exceed_the_keys_rights() -> None:
    """A call under a key limited to one voice and residency: asking for another voice, or another
    residency, ends the call (1008, saying why) and no turn runs; the allowed voice is spoken."""
    claims = {"sub": "tenant-a", "exp": int(time.time()) + 600, "voices": ["alloy"], "residency": ["eu"]}
    token = jwt.encode(claims, JWT_SECRET, algorithm="HS256")
    router = ScriptedRouter(spoken_reply("Hi."))
    async with _edge(router) as (url, services):
        for params, code in [
            ({"voice": "echo"}, "voice_not_allowed"),
            ({"residency": "us"}, "residency_not_allowed"),
        ]:
            async with place_call(url, TOKEN, parameters={"voicemesh_key": token, **params}) as call:
                async with asyncio.timeout(10):
                    await call.ws.wait_closed()
            assert (call.ws.close_code, call.ws.close_reason) == (1008, code), params
        assert not router.turns and services.open_sessions == 0
        async with place_call(url, TOKEN, parameters={"voicemesh_key": token, "voice": "alloy"}) as call:
            await call.send_mulaw(_speech(), pace=0)
            await call.wait_until(lambda: _done_marks(call) >= 1)
            await call.stop()
    assert router.turns[0].session.residency == frozenset({"eu"})  # the key's, not the edge's default
    assert router.turns[0].start.voice != ""


async def test_voice_webhook_answers_twiml_connecting_the_stream() -> None:
    async with _edge() as (url, _services):
        http_url = url.replace("ws://", "http://") + "/v1/twilio/voice?voice=alloy"
        signed = http_url.replace("http://", "https://")
        form = {"CallSid": "CA123", "From": "+15550100", "To": "+15550101"}
        async with httpx.AsyncClient() as http:
            ok = await http.post(
                http_url, data=form, headers={"X-Twilio-Signature": sign(TOKEN, signed, form)}
            )
            forged = await http.post(http_url, data={**form, "From": "+15550199"},
                                     headers={"X-Twilio-Signature": sign(TOKEN, signed, form)})  # fmt: skip
    assert ok.status_code == 200 and ok.headers["content-type"].startswith("application/xml")
    host = url.split("://")[1]
    stream = f'<Stream url="wss://{host}{PATH}"><Parameter name="voice" value="alloy" /></Stream>'
    assert f"<Response><Connect>{stream}</Connect></Response>" in ok.text
    assert forged.status_code == 403


async def test_no_task_outlives_the_call() -> None:
    async def call_and_hang_up() -> list[asyncio.Task[Any]]:
        before = asyncio.all_tasks()
        async with _edge() as (url, services):
            async with place_call(url, TOKEN) as call:
                await call.send_mulaw(_speech(), pace=0)
                await call.wait_until(lambda: _done_marks(call) >= 1)
            # The socket closed without a `stop` (a dropped call): the edge ends the session all the same.
            await call.wait_until(lambda: not services.open_sessions and not services.sessions.live)
        await asyncio.sleep(0.05)
        return [t for t in asyncio.all_tasks() - before if not t.done()]

    leaked = await in_own_loop(call_and_hang_up)
    assert leaked == [], leaked
