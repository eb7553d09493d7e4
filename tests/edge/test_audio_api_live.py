"""The OpenAI audio API end to end: the stock openai SDK against a real edge in front of a real
region (Kokoro reads the text, Whisper transcribes), every response format decoded back, the
speech of one transcribed again with Whisper to check its words, and espeak-ng recordings
transcribed in each response format. Failover and the fallback voice are in
``tests/edge/test_speech_failover_live.py``; request checks in ``tests/edge/test_audio_api.py``.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openai
import pytest
import soundfile as sf

from edge.speech.audio_encoding import decode_upload
from tests.fixtures.common import run_example
from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RegionFactory, Transcribe
from voicemesh.profiles import cpu_profile
from wire.audio import REGION_OUT_RATE, float_to_pcm16

TEXT = "Hello there. This is a short test of the speech service."
QUESTION = "Please book a table for two people tonight."
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_audio.py"


def client(edge: RunningEdge) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=edge.api_key, base_url=f"{edge.http_url}/v1", timeout=180, max_retries=0
    )


async def speak(edge: RunningEdge, fmt: str, stream_format: str = "audio") -> tuple[dict[str, str], bytes]:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    chunks: list[bytes] = []
    first = 0.0
    async with client(edge).audio.speech.with_streaming_response.create(
        model="tts-1",
        voice="alloy",
        input=TEXT,
        response_format=fmt,
        stream_format=stream_format,  # type: ignore[arg-type]
    ) as resp:
        async for chunk in resp.iter_bytes():
            first = first or loop.time() - t0
            chunks.append(chunk)
    print(f"{fmt}/{stream_format}: first bytes after {first:.2f} s, all after {loop.time() - t0:.2f} s")
    return dict(resp.headers), b"".join(chunks)


def seconds_of(pcm: bytes) -> float:
    return len(pcm) / 2 / REGION_OUT_RATE


async def test_speech_as_pcm_wav_mp3_and_sse_decodes_to_audio_at_24_khz(
    edge: RunningEdge, transcribe: Transcribe
) -> None:
    headers, pcm = await speak(edge, "pcm")
    assert headers["content-type"] == "audio/pcm" and headers.get("x-voicemesh-region")
    assert seconds_of(pcm) > 1.0 and np.abs(np.frombuffer(pcm, "<i2")).max() > 1000

    headers, wav = await speak(edge, "wav")
    samples, rate = sf.read(io.BytesIO(wav), dtype="float32")
    assert headers["content-type"] == "audio/wav" and rate == 24_000 and len(samples) / rate > 1.0

    headers, mp3 = await speak(edge, "mp3")
    samples_mp3, rate_mp3 = sf.read(io.BytesIO(mp3), dtype="float32")
    assert (
        headers["content-type"] == "audio/mpeg" and rate_mp3 == 24_000 and len(samples_mp3) / rate_mp3 > 1.0
    )

    headers, body = await speak(edge, "pcm", stream_format="sse")
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events][-1] == "speech.audio.done" and len(events) >= 3  # a delta per clause
    sse_pcm = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    assert seconds_of(sse_pcm) > 1.0 and events[-1]["voicemesh"]["fallback"] is None
    assert events[-1]["usage"]["input_tokens"] > 0

    # The words: the WAV (as any client would play it) through Whisper.
    heard = (await transcribe(float_to_pcm16(samples), rate)).lower()
    print(f"region {headers.get('x-voicemesh-region')} said: {heard!r}")
    assert "test" in heard and "speech" in heard, heard


async def test_opus_and_flac_decode_too(edge: RunningEdge) -> None:
    for fmt in ("opus", "flac"):
        _, data = await speak(edge, fmt)
        audio = decode_upload(data, max_seconds=60)  # FFmpeg, as a browser or player would
        assert len(audio) / 16_000 > 1.0, fmt


async def test_transcriptions_in_json_text_and_verbose_json(
    edge: RunningEdge, speech: Callable[..., Path]
) -> None:
    wav = speech(QUESTION).read_bytes()
    c = client(edge)
    as_json = await c.audio.transcriptions.create(model="whisper-1", file=("q.wav", wav))
    assert "table" in as_json.text.lower(), as_json.text
    as_text = await c.audio.transcriptions.create(
        model="whisper-1", file=("q.wav", wav), response_format="text"
    )
    assert "table" in as_text.lower()
    verbose = await c.audio.transcriptions.create(
        model="whisper-1", file=("q.wav", wav), response_format="verbose_json", language="en"
    )
    assert "table" in verbose.text.lower() and verbose.segments
    assert all(0 <= s.start < s.end <= verbose.duration + 0.5 for s in verbose.segments)
    assert " ".join(s.text for s in verbose.segments) == verbose.text
    assert verbose.duration == pytest.approx(sf.info(io.BytesIO(wav)).duration, abs=0.01)


async def test_an_mp3_upload_is_transcribed_and_bad_audio_is_refused(
    edge: RunningEdge, speech: Callable[..., Path]
) -> None:
    samples, rate = sf.read(speech(QUESTION), dtype="float32")
    mp3 = io.BytesIO()
    sf.write(mp3, samples, rate, format="MP3")
    c = client(edge)
    result = await c.audio.transcriptions.create(model="whisper-1", file=("q.mp3", mp3.getvalue()))
    assert "table" in result.text.lower(), result.text
    with pytest.raises(openai.BadRequestError) as caught:
        await c.audio.transcriptions.create(model="whisper-1", file=("q.mp3", b"ID3" + b"\x00" * 500))
    assert isinstance(caught.value.body, dict) and caught.value.body["param"] == "file"


async def test_models_lists_the_profile_models(
    edge_factory: EdgeFactory, region_factory: RegionFactory
) -> None:
    profile = cpu_profile()
    edge = await edge_factory(
        [region_factory("edge-test", max_concurrent=2, max_queue=4)], models=profile.model_names()
    )
    models = await client(edge).models.list()
    assert [m.id for m in models.data] == [
        "voicemesh",
        "smollm2-135m-instruct",
        "whisper-base",
        "kokoro-int8",
    ]


async def test_the_readme_example_runs_against_the_edge(
    edge: RunningEdge, speech: Callable[..., Path], tmp_path: Path
) -> None:
    """``examples/openai_audio.py`` as a user runs it: models, speech to a WAV, a transcript."""
    out = tmp_path / "speech.wav"
    script = EXAMPLE
    text = await run_example(
        script, str(speech(QUESTION)), str(out), "--url", f"{edge.http_url}/v1", "--key", edge.api_key,
        timeout_s=300,
    )  # fmt: skip
    assert "models: voicemesh" in text and "table" in text.lower(), text
    info = sf.info(str(out))
    assert info.samplerate == 24_000 and info.frames > 24_000
