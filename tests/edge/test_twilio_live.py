"""A phone call end to end through Twilio's protocol: a real edge (Silero VAD, the real router) in
front of a real region (Whisper -> vLLM -> Kokoro). The caller's question, spoken by espeak-ng and
converted to 8 kHz mu-law, goes as 20 ms ``media`` messages in real time, with silence after it as
a phone line streams; the answer comes back as mu-law ``media`` (speech: loud, seconds of it), and
talking over it yields a ``clear``, then an answer to the interruption.

Twilio itself cannot run here: ``voicemesh/twilio_client.py`` plays it (signing, playback, marks).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from edge.app.twilio import messages
from edge.shared.settings import TwilioSettings
from tests.fixtures.edge import EdgeFactory
from tests.fixtures.region import RegionFactory
from voicemesh.twilio_client import energy, place_call, to_mulaw
from wire.audio import read_wav

TOKEN = "twilio-auth-token-live-0123456789"
TIMEOUT_S = 180.0


def _mulaw(path: Path) -> bytes:
    samples, rate = read_wav(path)
    return to_mulaw(samples, rate)


async def test_phone_call_is_answered_and_barge_in_clears(
    edge_factory: EdgeFactory, region_factory: RegionFactory, speech: Callable[..., Path]
) -> None:
    region = region_factory("edge-test", max_concurrent=2, max_queue=4)
    edge = await edge_factory([region], twilio=TwilioSettings(auth_token=TOKEN, api_key=None))
    question = _mulaw(speech("Tell me a long story about a dragon.", rate=8000))
    interruption = _mulaw(speech("Stop, stop. Wait a moment please.", rate=8000))
    host = edge.http_url.split("://", 1)[1]
    params = {"voicemesh_key": edge.api_key, "instructions": "Tell long, detailed stories of many sentences."}
    async with place_call(f"ws://{host}", TOKEN, parameters=params) as call:
        received = call.received
        await call.send_mulaw(question)  # 20 ms frames, in real time
        asked_at = time.monotonic()  # (the WAV's 0.8 s of trailing silence included)
        # The first clause played (Twilio echoed its mark): talk over the rest, as a person would.
        await call.send_silence_until(
            lambda: any(n.startswith("clause:") for n in received.echoed), TIMEOUT_S
        )
        answer = received.audio()
        interrupted_at = time.monotonic()
        await call.send_mulaw(interruption)
        await call.send_silence_until(lambda: bool(received.clears), TIMEOUT_S)
        cleared_at = received.clears[0]
        # The interruption is answered in turn (its end of turn came after the clear).
        await call.send_silence_until(lambda: bool(received.audio(since=cleared_at)), TIMEOUT_S)
        await call.stop()
        await call.wait_until(lambda: edge.services.open_sessions == 0, 30)

    first_audio_s = received.media[0][0] - asked_at
    print(
        f"first media {first_audio_s:+.2f} s after the question's last frame; clear "
        f"{cleared_at - interrupted_at:.2f} s after the interruption's first frame"
    )  # (-s shows it)
    assert received.stream_sids == {call.stream_sid} and received.other == []
    assert all(len(chunk) == messages.FRAME_BYTES for _, chunk in received.media)
    # The first clause, whole: Twilio echoes a mark once the audio before it has played. A clause can
    # be as short as "Sure." ("Once upon a time," was 0.92 s); a mark sent ahead of its audio gives ~0.
    assert len(answer) / messages.RATE >= 0.25
    assert energy(answer) > 0.02  # speech, not silence (Kokoro's speech is around 0.1)
    assert len(received.clears) >= 1
    assert energy(received.audio(since=cleared_at)) > 0.02
