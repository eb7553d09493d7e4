"""A custom voice across a region's death, end to end: the stock openai SDK, real regions (Kokoro)
started AFTER the voice was made, two real edges sharing one ``redis-server`` (the voice made on
one, spoken through the other), and a SIGKILL of the serving region once its first audio reached
the client. The turn carries the voice's definition (``TurnStart.custom_voice``), so the region
the router fails over to speaks the rest in the same voice: its log names the style it computed
from that definition, and what it said is speech, not silence.

The same on stand-ins: ``tests/edge/test_custom_voices.py`` (the edge's side) and
``tests/region/test_custom_voices.py`` (a blend is the weighted sum of Kokoro's styles).
"""

from __future__ import annotations

import base64
import json
import os
import signal
from typing import Any

import numpy as np
import openai

from tests.fixtures.edge import EdgeFactory
from tests.fixtures.region import RegionFactory, Transcribe
from wire.audio import REGION_OUT_RATE
from wire.voices import CustomVoice, voice_digest

ADMIN = "admin-custom-voices-live"
TEXT = " ".join(
    f"Sentence {n} is about the {w}."
    for n, w in zip(
        ("one", "two", "three", "four", "five"), ("apple", "banana", "cherry", "lemon", "orange"), strict=True
    )
)


def rms(pcm: bytes) -> float:
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0


async def test_a_custom_voice_survives_a_sigkill_of_the_serving_region(
    edge_factory: EdgeFactory, region_factory: RegionFactory, redis_url: str, transcribe: Transcribe
) -> None:
    # The voice is made first, on an edge with no region at all: no region exists yet to hear of it.
    maker = await edge_factory([], store_url=redis_url, admin_keys=(ADMIN,))
    admin = openai.AsyncOpenAI(api_key=ADMIN, base_url=f"{maker.http_url}/v1", max_retries=0)
    made = await admin.post(
        "/voices", body={"name": "live-blend", "blend": {"jf_alpha": 0.6, "jm_kumo": 0.4}, "shared": True},
        cast_to=dict[str, Any],
    )  # fmt: skip
    digest = voice_digest(CustomVoice(id=made["id"], blend=made["blend"]))[:16]

    regions = {r.id: r for r in (region_factory("voice-kill-a"), region_factory("voice-kill-b"))}
    edge = await edge_factory(list(regions.values()), store_url=redis_url, admin_keys=(ADMIN,))
    sdk = openai.AsyncOpenAI(api_key=edge.api_key, base_url=f"{edge.http_url}/v1", timeout=240, max_retries=0)
    events: list[dict[str, Any]] = []
    killed, before_kill = "", 0
    async with sdk.audio.speech.with_streaming_response.create(
        model="tts-1", voice={"id": made["id"]}, input=TEXT, response_format="pcm", stream_format="sse"
    ) as resp:  # type: ignore[arg-type]  # the SDK types `voice` as a name; the API takes {"id"} too
        serving = resp.headers["x-voicemesh-region"]
        assert serving in regions and resp.headers["x-voicemesh-cache"] == "miss"
        async for line in resp.iter_lines():
            if not line.startswith("data: "):
                continue
            events.append(json.loads(line[6:]))
            if not killed and events[-1]["type"] == "speech.audio.delta":
                os.kill(regions[serving].pid, signal.SIGKILL)  # its first clause is out: mid-speech
                killed, before_kill = serving, len(events)
    done = events[-1]
    assert done["type"] == "speech.audio.done", [e["type"] for e in events]
    survivor = next(r for r in regions if r != killed)
    assert done["voicemesh"] == {"regions": [killed, survivor], "fallback": None}, done

    # Both regions got the definition in their turn and computed the style from it (neither had
    # been told of the voice otherwise: they started after it was made, and share no store).
    line = f"custom voice {made['id']}: style {digest} computed (blend)"
    assert line in regions[killed].log(), regions[killed].log()[-2000:]
    assert line in regions[survivor].log(), regions[survivor].log()[-2000:]

    deltas = [base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta"]
    rest = b"".join(deltas[before_kill:])  # what the survivor said, in the custom voice
    assert len(rest) / 2 / REGION_OUT_RATE > 1.0, "the survivor said next to nothing"
    assert rms(rest) > 0.01, f"the survivor's audio is silent (rms {rms(rest):.4f})"
    heard = (await transcribe(b"".join(deltas), REGION_OUT_RATE)).lower()
    print(f"killed {killed}, continued on {survivor} with {made['id']}: {heard!r}, rms {rms(rest):.3f}")
    assert sum(w in heard for w in ("banana", "cherry", "lemon", "orange")) >= 2, heard
