"""``POST /v1/audio/speech`` across a region's death, end to end: the stock openai SDK, a real edge,
two real regions (Kokoro), and a SIGKILL of the serving region once its first audio has reached
the client. The other region goes on from the next clause: every sentence is heard once, none
twice (checked on the received audio, transcribed by Whisper). With no region at all, the edge's
Piper voice reads the text, and a response header says so.

The precise continuation (which clauses a continuing region skips) is pinned with stand-in models
in ``tests/region/test_speak_only.py``; the edge's side with a scripted router in
``tests/edge/test_audio_api.py``.
"""

from __future__ import annotations

import base64
import json
import os
import signal
from typing import Any

import openai

from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RegionFactory, Transcribe
from wire.audio import REGION_OUT_RATE

WORDS = ("apple", "banana", "cherry", "lemon", "orange", "mango")
TEXT = " ".join(
    f"Sentence {n} is about the {w}."
    for n, w in zip(("one", "two", "three", "four", "five", "six"), WORDS, strict=True)
)


def client(edge: RunningEdge) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=edge.api_key, base_url=f"{edge.http_url}/v1", timeout=240, max_retries=0
    )


async def test_sigkill_of_the_serving_region_mid_stream_continues_on_another_without_repeating(
    edge_factory: EdgeFactory, region_factory: RegionFactory, transcribe: Transcribe
) -> None:
    regions = {r.id: r for r in (region_factory("speech-kill-a"), region_factory("speech-kill-b"))}
    edge = await edge_factory(list(regions.values()))
    events: list[dict[str, Any]] = []
    killed = ""
    async with client(edge).audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input=TEXT, response_format="pcm", stream_format="sse"
    ) as resp:
        serving = resp.headers["x-voicemesh-region"]
        assert serving in regions
        async for line in resp.iter_lines():
            if not line.startswith("data: "):
                continue
            events.append(json.loads(line[6:]))
            if not killed and events[-1]["type"] == "speech.audio.delta":
                os.kill(regions[serving].pid, signal.SIGKILL)  # its first clause is out: mid-stream
                killed = serving
    done = events[-1]
    assert done["type"] == "speech.audio.done", [e["type"] for e in events]
    survivor = next(r for r in regions if r != killed)
    assert done["voicemesh"] == {"regions": [killed, survivor], "fallback": None}, done
    pcm = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    heard = (await transcribe(pcm, REGION_OUT_RATE)).lower()
    counts = {w: heard.count(w) for w in WORDS}
    print(f"killed {killed}, continued on {survivor}: {heard!r} {counts}")
    assert all(n <= 1 for n in counts.values()), f"a sentence was repeated: {counts} in {heard!r}"
    assert sum(n == 1 for n in counts.values()) >= len(WORDS) - 1, f"sentences missing: {counts} in {heard!r}"


async def test_no_region_left_the_edge_voice_reads_the_text_and_says_so(
    lonely_edge: RunningEdge, transcribe: Transcribe
) -> None:
    async with client(lonely_edge).audio.speech.with_streaming_response.create(
        model="tts-1", voice="alloy", input="The edge can still speak for itself.", response_format="pcm"
    ) as resp:
        assert resp.headers["x-voicemesh-fallback"] == "edge-voice"
        assert "x-voicemesh-region" not in resp.headers
        pcm = b"".join([c async for c in resp.iter_bytes()])
    assert len(pcm) / 2 / REGION_OUT_RATE > 1.0
    heard = (await transcribe(pcm, REGION_OUT_RATE)).lower()
    assert "speak" in heard and "itself" in heard, heard  # Piper saying the text, not a hold message
