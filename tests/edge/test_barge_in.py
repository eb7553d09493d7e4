"""Barge-in: talking over the answer stops its audio at once, cancels the region's turn, and the
history keeps exactly what the user heard: the clauses whose audio was played before they spoke,
never nothing (the user talks over the answer only once its first clause has been played)."""

from __future__ import annotations

import asyncio
import base64
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np

from tests.edge.conftest import session_id
from tests.fixtures.edge import RunningEdge
from tests.fixtures.region import RegionFactory
from voicemesh.realtime import client, stream_audio
from wire.audio import CLIENT_RATE, FloatAudio
from wire.region_auth import ClientAuth

OUT_BYTES_PER_S = 48_000
"""The answer's audio: 24 kHz PCM16 (the session's default output format)."""
SLOW_CHARS_PER_S = 10.0
"""Slower than Kokoro speaks (about 15 characters a second): once this much audio per character of
the first clause has arrived, the first clause has been played whole."""


def _cancels(region_url: str) -> float:
    text = httpx.get(f"{region_url}/metrics", timeout=5, headers=ClientAuth.from_env().headers()).text
    match = re.search(r"^voicemesh_region_cancels_total (\S+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


async def test_barge_in_stops_audio_and_cancels_region_turn(
    edge: RunningEdge, region_factory: RegionFactory, say: Callable[[str], FloatAudio]
) -> None:
    region = region_factory("edge-test", max_concurrent=2, max_queue=4)
    cancels_before = _cancels(region.url)
    question = say("Tell me a long story about a dragon.")
    interruption = say("Stop, stop. Wait a moment please.")
    silence = np.zeros(CLIENT_RATE // 2, dtype=np.float32)
    events: list[tuple[float, object]] = []
    async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
        created = await conn.recv()
        sid = session_id(created)
        await conn.session.update(
            session={"type": "realtime", "instructions": "Tell long, detailed stories of many sentences."}
        )
        await stream_audio(conn, np.concatenate([question, silence, silence]), pace=1.5)
        talker: asyncio.Task[None] | None = None
        first_clause, audio_s = "", 0.0
        async with asyncio.timeout(120):
            async for event in conn:
                events.append((time.monotonic(), event))
                if event.type == "response.output_audio_transcript.delta" and not first_clause:
                    first_clause = event.delta
                if event.type == "response.output_audio.delta":
                    audio_s += len(base64.b64decode(event.delta)) / OUT_BYTES_PER_S
                    if talker is None and first_clause and audio_s >= len(first_clause) / SLOW_CHARS_PER_S:
                        # The first clause has been played: talk over the rest, like a person would.
                        talker = asyncio.create_task(
                            stream_audio(conn, np.concatenate([interruption, silence]))
                        )
                if event.type == "response.done":
                    break
        assert talker is not None
        await talker
        state = await edge.services.sessions.load(sid)

    types = [e.type for _, e in events]  # type: ignore[attr-defined]
    assert types.count("input_audio_buffer.speech_started") == 2, types
    barge_at = [t for t, e in events if e.type == "input_audio_buffer.speech_started"][1]  # type: ignore[attr-defined]
    done = events[-1][1]
    assert done.response.status == "cancelled"  # type: ignore[attr-defined]
    assert done.response.status_details.reason == "turn_detected"  # type: ignore[attr-defined]
    # Audio stops at once: at most one delta already on the wire after the user started talking.
    late = [e for t, e in events if t >= barge_at and e.type == "response.output_audio.delta"]  # type: ignore[attr-defined]
    assert len(late) <= 1, f"{len(late)} audio deltas after speech_started"

    # Some of the answer was heard before the barge-in: audio had been played, and its clauses are
    # what the response says was heard, a non-empty prefix of what was said.
    before: list[Any] = [e for t, e in events if t < barge_at and e.type == "response.output_audio.delta"]  # type: ignore[attr-defined]
    played_s = sum(len(base64.b64decode(e.delta)) for e in before) / OUT_BYTES_PER_S
    assert played_s >= len(first_clause) / SLOW_CHARS_PER_S > 0, (played_s, first_clause)
    heard = done.response.output[0].content[0].transcript  # type: ignore[attr-defined]
    full = "".join(e.delta for _, e in events if e.type == "response.output_audio_transcript.delta")  # type: ignore[attr-defined]
    assert heard.strip(), f"nothing heard, though {played_s:.1f} s of the answer was played: {full!r}"
    assert full.strip().startswith(heard), (heard, full)
    # History holds exactly the heard part: one assistant message, the heard transcript.
    assert state is not None
    assistant = [m.content for m in state.history if m.role == "assistant"]
    assert assistant == [heard], (assistant, heard)

    # The region's turn was cancelled, not left running.
    for _ in range(50):
        if _cancels(region.url) > cancels_before:
            break
        await asyncio.sleep(0.1)
    assert _cancels(region.url) > cancels_before
