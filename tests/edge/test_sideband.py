"""Server-side controls ("sideband", ``GET /v1/realtime?call_id=``, ``edge/app/sideband.py``) on a
WebRTC call and on a Twilio call, and resume over WebRTC (``POST /v1/realtime/calls?session_id=``).

An application server's WebSocket (``websockets``, on loopback) joins a live call: it declares a
function tool, receives the model's call, answers it, and the caller hears the answer: on its
WebRTC track (a real aiortc peer, ``voicemesh/webrtc_client.py``) or as Twilio ``media``
(``voicemesh/twilio_client.py`` plays Twilio, which cannot run here).

Fast tier: the real app on stand-ins (``edge.testing``: energy VAD, a ``ScriptedRouter`` whose first
answer is the function call and second the spoken answer): the sideband is under test, not a model.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgspec
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from edge.app.services import EdgeServices
from edge.shared.settings import EdgeSettings, TwilioSettings
from edge.testing import (
    ScriptedRouter,
    ScriptStep,
    called,
    clause,
    rms,
    served,
    silence,
    spoken_reply,
    tone,
)
from router.api import Routed
from tests.fixtures.common import free_port
from voicemesh.twilio_client import energy, place_call, to_mulaw
from voicemesh.webrtc_client import WebRtcCaller
from wire.audio import CLIENT_RATE, pcm16_to_float
from wire.turn import TextDelta, TurnDone

KEY, OTHER_KEY = "app-key-0123456789", "other-key-0123456789"
TOKEN = "twilio-auth-token-0123456789abcdef"
WEATHER: dict[str, Any] = {
    "type": "function", "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}  # fmt: skip


@asynccontextmanager
async def _edge(router: ScriptedRouter) -> AsyncIterator[tuple[str, EdgeServices]]:
    settings = EdgeSettings(
        api_keys=(KEY, OTHER_KEY), port=free_port(),
        twilio=TwilioSettings(auth_token=TOKEN, api_key=KEY, public_url=None),
    )  # fmt: skip
    async with served(settings, router) as services:
        yield f"127.0.0.1:{settings.port}", services


def _tool_then_answer() -> ScriptedRouter:
    """The model calls the tool, then answers with its result (0.6 s of tone: heard on a track)."""
    said = "It is sunny in Paris."
    answer: list[ScriptStep] = [
        Routed(region="scripted"), TextDelta(turn_id="turn", delta=said), clause(said, seconds=0.6),
        TurnDone(turn_id="turn", region="scripted", status="completed", text=said),
    ]  # fmt: skip
    return ScriptedRouter(called("get_weather", '{"city": "Paris"}'), answer)


class AppServer:
    """The application server's sideband: its events collected, client events sent."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.closed = asyncio.Event()
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                self.events.append(json.loads(raw))
                self._arrived.set()
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == type_]

    async def wait_for(self, type_: str, count: int = 1, within_s: float = 60.0) -> dict[str, Any]:
        """The ``count``-th event of ``type_`` (``within_s`` only stops a broken run from hanging)."""
        async with asyncio.timeout(within_s):
            while len(found := self.of_type(type_)) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return found[count - 1]

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(event))


@asynccontextmanager
async def sideband(host: str, call_id: str, key: str = KEY) -> AsyncIterator[AppServer]:
    headers = {"Authorization": f"Bearer {key}"}
    async with connect(f"ws://{host}/v1/realtime?call_id={call_id}", additional_headers=headers) as ws:
        app = AppServer(ws)
        try:
            yield app
        finally:
            await ws.close()
            await app._reader


async def _run_the_tool(app: AppServer) -> dict[str, Any]:
    """The application server's part: the model's call answered, and a response asked for."""
    call = await app.wait_for("response.function_call_arguments.done")
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": '{"sky": "sunny"}'}
    await app.send({"type": "conversation.item.create", "item": output})
    await app.send({"type": "response.create"})
    return call


async def test_a_webrtc_call_gets_its_tool_run_by_the_sideband() -> None:
    router = _tool_then_answer()
    async with _edge(router) as (host, _), WebRtcCaller.connect(f"http://{host}", KEY) as caller:
        await caller.wait_for("session.created")
        assert caller.call_url is not None
        async with sideband(host, caller.call_url.rsplit("/", 1)[1]) as app:
            await app.send({"type": "session.update", "session": {"type": "realtime", "tools": [WEATHER]}})
            updated = await app.wait_for("session.updated")
            assert updated["session"]["tools"] == [WEATHER]
            caller.speak(tone(0.8) + silence(0.8))
            call = await _run_the_tool(app)
            await caller.wait_for("output_audio_buffer.stopped")  # the answer was played on the track...
            await caller.hear(0.5)  # ...and what was in flight (the network, the jitter buffer) arrived
            await app.wait_for("response.done", count=2)
        # The sideband got the call exactly once, and events, never the answer's audio.
        assert len(app.of_type("response.function_call_arguments.done")) == 1
        assert not app.of_type("response.output_audio.delta")
        said = [e["transcript"] for e in app.of_type("response.output_audio_transcript.done")]
        assert "It is sunny in Paris." in said, said
        # The caller's data channel saw the same events, as OpenAI's does; its track carried the answer.
        assert [c["call_id"] for c in caller.of_type("response.function_call_arguments.done")] == [
            call["call_id"]
        ]
        second = router.turns[1].start  # the answer's turn: the sideband's tool and its output
        assert (
            second.tools[0].name == "get_weather" and "sunny" in msgspec.json.encode(second.history).decode()
        )
        assert rms(caller.heard) > 0.01, "the answer was not heard on the track"


async def test_a_twilio_call_gets_its_tool_run_by_the_sideband() -> None:
    router = _tool_then_answer()
    speech = to_mulaw(pcm16_to_float(silence(0.3) + tone(0.6) + silence(0.8)), CLIENT_RATE)
    async with _edge(router) as (host, services), place_call(f"ws://{host}", TOKEN) as phone:
        async with sideband(host, phone.call_sid) as app:
            await app.send({"type": "session.update", "session": {"type": "realtime", "tools": [WEATHER]}})
            await app.wait_for("session.updated")
            await phone.send_mulaw(speech, pace=0)
            await _run_the_tool(app)
            await phone.wait_until(lambda: any(n.startswith("done:") for _, n in phone.received.marks))
        assert len(app.of_type("response.function_call_arguments.done")) == 1
        assert not app.of_type("response.output_audio.delta")
        assert energy(phone.received.audio()) > 0.1  # the answer came back to the phone as media
        assert phone.received.other == []  # nothing Twilio would refuse went down the stream
        # The sideband went away; the call goes on (its session is still served).
        assert services.open_sessions == 1


async def test_sidebands_are_refused_for_unknown_and_other_keys_calls_and_bounded() -> None:
    """The browser's call is placed with an ``ek_`` secret minted from ``KEY``: the application
    server's sidebands with ``KEY`` are that call's key's; ``OTHER_KEY``'s are not."""
    async with _edge(_tool_then_answer()) as (host, _), httpx.AsyncClient() as http:
        minted = await http.post(
            f"http://{host}/v1/realtime/client_secrets", json={}, headers={"Authorization": f"Bearer {KEY}"}
        )
        secret = minted.json()["value"]
        async with WebRtcCaller.connect(f"http://{host}", secret) as caller:
            await _refused_and_bounded(host, caller)


async def _refused_and_bounded(host: str, caller: WebRtcCaller) -> None:
    assert caller.call_url is not None
    call_id = caller.call_url.rsplit("/", 1)[1]
    for wanted, key, status in ((call_id, OTHER_KEY, 403), ("rtc_nope", KEY, 404), (call_id, "bad", 401)):
        with pytest.raises(InvalidStatus) as refused:
            async with sideband(host, wanted, key):
                pass
        assert refused.value.response.status_code == status
        assert refused.value.response.body is not None and b'"error"' in refused.value.response.body
    async with sideband(host, call_id), sideband(host, call_id), sideband(host, call_id):
        async with sideband(host, call_id):
            with pytest.raises(InvalidStatus) as refused:
                async with sideband(host, call_id):
                    pass
            assert refused.value.response.status_code == 429  # at most 4 on a call


async def test_a_sideband_leaving_keeps_the_call_and_the_call_ending_closes_it() -> None:
    async with _edge(_tool_then_answer()) as (host, services):
        async with WebRtcCaller.connect(f"http://{host}", KEY) as caller:
            assert caller.call_url is not None
            call_id = caller.call_url.rsplit("/", 1)[1]
            async with sideband(host, call_id):
                pass  # (closed by the application server)
            caller.send({"type": "session.update", "session": {"type": "realtime", "instructions": "Hi."}})
            assert (await caller.wait_for("session.updated"))["session"]["instructions"] == "Hi."
            async with sideband(host, call_id) as app:
                async with httpx.AsyncClient() as http:
                    hung = await http.post(
                        f"http://{host}{caller.call_url}/hangup", headers={"Authorization": f"Bearer {KEY}"}
                    )
                    assert hung.status_code == 200, hung.text
                async with asyncio.timeout(30):
                    await app.closed.wait()
                assert app.ws.close_code == 1000 and app.ws.close_reason == "call_ended"
        for _ in range(600):  # (no leak: the session, the call's task and the sideband's end)
            if not services.open_sessions and not _edge_tasks():
                break
            await asyncio.sleep(0.05)
        assert (services.open_sessions, _edge_tasks()) == (0, [])


def _edge_tasks() -> list[str]:
    names = (t.get_name() for t in asyncio.all_tasks())
    return [n for n in names if n.startswith(("sideband ", "call "))]


async def test_a_webrtc_call_resumes_a_session_and_takes_it_over() -> None:
    router = ScriptedRouter(spoken_reply("Paris is the capital."), spoken_reply("Yes."))
    question = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Capital?"}]}
    async with _edge(router) as (host, _), WebRtcCaller.connect(f"http://{host}", KEY) as first:
        session_id = (await first.wait_for("session.created"))["session"]["id"]
        first.send({"type": "conversation.item.create", "item": question})
        first.send({"type": "response.create"})
        await first.wait_for("response.done")
        async with WebRtcCaller.connect(f"http://{host}", KEY, session_id=session_id) as second:
            assert (await second.wait_for("session.created"))["session"]["id"] == session_id
            await second.wait_for("voicemesh.session.resumed")
            items = [e["item"] for e in second.of_type("conversation.item.done")]
            assert [i["role"] for i in items] == ["user", "assistant"]
            assert items[0]["content"][0]["text"] == "Capital?"
            async with asyncio.timeout(30):
                await first.ended.wait()  # taken over
            assert [e["error"]["code"] for e in first.of_type("error")] in ([], ["session_taken_over"])
            second.send({"type": "response.create"})
            await second.wait_for("response.done")
        # The second call's turn carried the first call's conversation.
        history = msgspec.json.encode(router.turns[1].start.history).decode()
        assert "Capital?" in history and "Paris is the capital." in history
