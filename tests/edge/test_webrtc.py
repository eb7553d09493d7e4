"""The Realtime API over WebRTC (``POST /v1/realtime/calls``, ``edge/app/webrtc/``), through the
edge's real server on loopback and a real aiortc peer (``voicemesh/webrtc_client.py``): the offer is
answered, events flow on the ``oai-events`` data channel, the caller's Opus audio reaches the session,
the answer's audio arrives on the track (never as deltas on the channel), ``output_audio_buffer.clear``
and a barge-in silence it at once, bad offers and bad keys are refused, and a peer that never
connects is freed.

Fast tier: the real app on stand-ins (``edge.testing``: energy VAD, scripted router); the models
are not what is under test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import httpx
import pytest

from edge.shared.settings import EdgeSettings, LimitSettings
from edge.testing import Hold, ScriptedRouter, ScriptStep, clause, rms, served, silence, tone
from router.api import Routed, TurnDone
from tests.fixtures.common import free_port
from voicemesh.webrtc_client import CallRefused, WebRtcCaller

KEY = "caller-key-0123"
_VAD = {"type": "server_vad", "silence_duration_ms": 300, "prefix_padding_ms": 100}


def _reply(seconds: float) -> list[ScriptStep]:
    """An answer of one clause of ``seconds`` of tone."""
    return [Routed(region="scripted"), clause("Hello there.", seconds=seconds),
            TurnDone(turn_id="turn", region="scripted", status="completed", text="Hello there.")]  # fmt: skip


@asynccontextmanager
async def _edge(
    *scripts: Sequence[ScriptStep], connect_s: float = 15.0, limits: LimitSettings | None = None
) -> AsyncIterator[tuple[str, ScriptedRouter]]:
    settings = EdgeSettings(
        api_keys=(KEY,), port=free_port(), webrtc_connect_s=connect_s, limits=limits or LimitSettings()
    )
    router = ScriptedRouter(*(scripts or [_reply(0.5)]))
    async with served(settings, router):
        yield f"http://127.0.0.1:{settings.port}", router


async def test_a_call_is_answered_and_its_events_flow_on_the_data_channel() -> None:
    async with _edge() as (url, _), WebRtcCaller.connect(url, KEY) as caller:
        created = await caller.wait_for("session.created")
        assert created["session"]["id"].startswith("sess")
        assert caller.call_url is not None and caller.call_url.startswith("/v1/realtime/calls/rtc_")
        caller.send({"type": "session.update", "session": {"type": "realtime", "instructions": "Be terse."}})
        updated = await caller.wait_for("session.updated")
        assert updated["session"]["instructions"] == "Be terse."
        async with httpx.AsyncClient() as http:
            auth = {"Authorization": f"Bearer {KEY}"}
            hung = await http.post(f"{url}{caller.call_url}/hangup", headers=auth)
            assert hung.status_code == 200, hung.text
            again = await http.post(f"{url}{caller.call_url}/hangup", headers=auth)
            assert again.status_code == 404  # that call is gone
        async with asyncio.timeout(30):
            await caller.ended.wait()  # the edge closed the peer connection


async def test_a_client_secret_opens_a_call() -> None:
    """As a browser does: its server mints an ``ek_`` secret with the API key, the page calls with it."""
    async with _edge() as (url, _), httpx.AsyncClient() as http:
        minted = await http.post(
            f"{url}/v1/realtime/client_secrets", json={}, headers={"Authorization": f"Bearer {KEY}"}
        )
        secret = minted.json()["value"]
        assert secret.startswith("ek_")
        async with WebRtcCaller.connect(url, secret) as caller:
            await caller.wait_for("session.created")


async def test_the_multipart_offer_configures_the_session() -> None:
    session = {"instructions": "Speak like a pirate.", "audio": {"input": {"turn_detection": _VAD}}}
    async with _edge() as (url, _), WebRtcCaller.connect(url, KEY, session=session) as caller:
        updated = await caller.wait_for("session.updated")
        assert updated["session"]["instructions"] == "Speak like a pirate."


async def test_speech_in_over_opus_is_answered_on_the_track() -> None:
    async with _edge(_reply(1.0)) as (url, router), WebRtcCaller.connect(url, KEY) as caller:
        await caller.wait_for("session.created")
        caller.speak(tone(0.8) + silence(0.8))
        done = await caller.wait_for("response.done")
        assert done["response"]["status"] == "completed"
        started = await caller.wait_for("output_audio_buffer.started")
        stopped = await caller.wait_for("output_audio_buffer.stopped")
        assert started["response_id"] == stopped["response_id"] == done["response"]["id"]
        # The caller's audio reached the session (the VAD heard it: the turn carried it to the router).
        assert router.turns and router.turns[0].audio is not None
        assert len(router.turns[0].audio) > 2 * 16_000 * 0.5  # most of the 0.8 s tone, at 16 kHz
        # The answer came on the track, never as deltas on the data channel.
        assert not caller.of_type("response.output_audio.delta")
        assert rms(caller.heard) > 0.01, "the answer's tone was not heard on the track"


async def _answer_playing(caller: WebRtcCaller) -> None:
    """Ask (a tone), and return once the (long) answer is heard on the track."""
    await caller.wait_for("session.created")
    caller.speak(tone(0.8) + silence(0.8))
    await caller.wait_for("output_audio_buffer.started")
    while rms(await caller.hear(0.1)) < 0.05:  # (the test's timeout stops a broken run)
        pass


async def _silence_follows(caller: WebRtcCaller) -> None:
    """After what was already in flight (0.5 s: the network, the jitter buffer), the track is silent:
    what the track held was dropped at once, not played out."""
    await caller.hear(0.5)
    after = await caller.hear(1.0)
    assert rms(after) < 0.005, rms(after)


async def test_output_audio_buffer_clear_silences_the_track_at_once() -> None:
    async with _edge(_reply(20.0)) as (url, _), WebRtcCaller.connect(url, KEY) as caller:
        await _answer_playing(caller)
        caller.send({"type": "output_audio_buffer.clear"})
        cleared = await caller.wait_for("output_audio_buffer.cleared")
        await _silence_follows(caller)
        done = await caller.wait_for("response.done")
        assert done["response"]["status"] == "cancelled"
        assert cleared["response_id"] == done["response"]["id"]


async def test_barge_in_clears_the_track() -> None:
    never_spoken = [Routed(region="scripted"), Hold()]  # the second turn's answer: silence
    async with _edge(_reply(20.0), never_spoken) as (url, _), WebRtcCaller.connect(url, KEY) as caller:
        await _answer_playing(caller)
        caller.speak(tone(0.6, hz=300) + silence(0.8))  # speaking over the answer
        cleared = await caller.wait_for("output_audio_buffer.cleared")
        await _silence_follows(caller)
        first = await caller.wait_for("response.done")
        assert first["response"]["status"] == "cancelled"
        assert cleared["response_id"] == first["response"]["id"]


async def test_bad_offers_and_bad_keys_are_refused() -> None:
    async with _edge() as (url, _), httpx.AsyncClient() as http:
        calls = f"{url}/v1/realtime/calls"
        auth = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/sdp"}
        bad = await http.post(calls, content="v=0\r\nnot an offer\r\n", headers=auth)
        assert bad.status_code == 400, bad.text
        assert "SDP offer" in bad.json()["error"]["message"]
        empty = await http.post(calls, content="", headers=auth)
        assert empty.status_code == 400 and "no SDP offer" in empty.json()["error"]["message"]
        with pytest.raises(CallRefused) as refused:
            async with WebRtcCaller.connect(url, "not-a-key"):
                pass
        assert refused.value.status == 401
        with pytest.raises(CallRefused) as refused:
            async with WebRtcCaller.connect(url, KEY, session={"instructions": 5}):
                pass
        assert refused.value.status == 400 and "session config" in refused.value.body


async def test_a_peer_that_never_connects_is_freed() -> None:
    """The offer is answered but the caller never completes ICE: the call is closed after
    ``webrtc_connect_s`` and its slot freed (the key's one session slot is free again)."""
    limits = LimitSettings(max_sessions_per_key=1)
    async with _edge(connect_s=1.0, limits=limits) as (url, _):
        stalled = WebRtcCaller()
        try:
            await stalled.pc.setLocalDescription(await stalled.pc.createOffer())
            async with httpx.AsyncClient() as http:
                headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/sdp"}
                answered = await http.post(
                    f"{url}/v1/realtime/calls", content=stalled.pc.localDescription.sdp, headers=headers
                )
            assert answered.status_code == 201  # (its answer is never applied: no ICE, no DTLS)
            with pytest.raises(CallRefused) as refused:
                async with WebRtcCaller.connect(url, KEY):
                    pass
            assert refused.value.status == 429  # the stalled call holds the key's one slot...
            for _ in range(100):  # ...until its connect time is up (1 s)
                await asyncio.sleep(0.1)
                try:
                    async with WebRtcCaller.connect(url, KEY) as caller:
                        await caller.wait_for("session.created")
                    break
                except CallRefused as exc:
                    assert exc.status == 429
            else:
                raise AssertionError("the stalled call's slot was never freed")
        finally:
            await stalled.close()
