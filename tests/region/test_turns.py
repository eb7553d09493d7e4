"""Real turns on a real region (Whisper, vLLM SmolLM2, Kokoro) over the turn protocol on loopback.

What the region does around its models (clause order, cancelling, admission, continuation) is also
tested fast on stand-ins in ``test_session_turns.py``; here the models are what is under test. How
fast a cancel stops is measured by ``voicemesh bench region``, not asserted (a busy machine is slow).
"""

from __future__ import annotations

import asyncio
import re

import httpx

from tests.fixtures.common import SpeechFactory
from tests.fixtures.region import RunningRegion, Transcribe
from tests.region.helpers import wav_pcm16, words
from wire.client import ClauseAudio, RegionConnection, collect_turn, run_turn
from wire.turn import TextDelta, Transcript, TurnAdmitted, TurnDone, TurnStart

_RUNNING = re.compile(r"vllm:num_requests_running\{[^}]*\} (\S+)")

STORY = "Tell me a long story about a dragon who learns to bake bread. Use many sentences."


async def test_spoken_question_gets_a_spoken_answer(
    region: RunningRegion, speech: SpeechFactory, transcribe: Transcribe
) -> None:
    pcm = wav_pcm16(speech("What is the weather like in London today?"))
    conn = await RegionConnection.open(region.url, region=region.id)
    clauses: list[ClauseAudio] = []
    done: TurnDone | None = None
    transcript = text = ""
    try:
        await conn.start(TurnStart(turn_id="london", temperature=0.0, max_output_tokens=60), pcm)
        async for ev in conn.events():
            if isinstance(ev, Transcript):
                transcript = ev.text
            elif isinstance(ev, TextDelta):
                text += ev.delta
            elif isinstance(ev, ClauseAudio):
                clauses.append(ev)
            elif isinstance(ev, TurnDone):
                done = ev
    finally:
        await conn.close()

    assert done is not None and done.status == "completed", done
    assert {"weather", "london"} <= words(transcript), transcript
    assert text.strip() and done.text == text
    assert clauses, "no audio came back"
    for c in clauses:
        assert c.clause.sample_rate == 24_000 and c.clause.audio_bytes == len(c.pcm) and len(c.pcm) % 2 == 0
    audio = b"".join(c.pcm for c in clauses)
    assert len(audio) / 2 / 24_000 > 0.5, "less than half a second of speech"
    heard = await transcribe(audio, 24_000)
    # Kokoro's voices here are Japanese ones speaking English: demand real words, not perfection.
    assert len(words(heard) & words(text)) >= 2, (heard, text)
    for stage in ("stt_s", "llm_ttft_s", "first_clause_s", "tts_first_audio_s", "first_audio_s", "total_s"):
        assert done.timings[stage] > 0, (stage, done.timings)
    assert done.timings["first_audio_s"] <= done.timings["total_s"]
    # vLLM's own token count: the prompt (system prompt, the question) and at most the answer's cap.
    assert done.usage is not None and done.usage.input_tokens > len(transcript.split()), done.usage
    assert 0 < done.usage.output_tokens <= 60, done.usage


async def test_audio_starts_before_the_answer_is_written(region: RunningRegion) -> None:
    conn = await RegionConnection.open(region.url, region=region.id)
    try:
        await conn.start(TurnStart(turn_id="story", text=STORY, max_output_tokens=300, temperature=0.0))
        done: TurnDone | None = None
        async for ev in conn.events():
            if isinstance(ev, ClauseAudio) and ev.clause.index == 0:
                await conn.cancel("story")  # a 300-token answer takes ~9 s to write: stop here
            elif isinstance(ev, TurnDone):
                done = ev
    finally:
        await conn.close()
    assert done is not None and done.status == "cancelled" and "first_audio_s" in done.timings
    # ``llm_s`` is stamped when the LLM stream ends: absent means audio went out while it was writing.
    assert "llm_s" not in done.timings, done.timings
    assert done.timings["first_clause_s"] < done.timings["first_audio_s"]


async def test_cancel_mid_answer_aborts_the_llm_and_the_next_turn_works(
    region: RunningRegion, llm_url: str
) -> None:
    conn = await RegionConnection.open(region.url, region=region.id)
    try:
        await conn.start(TurnStart(turn_id="long", text=STORY, max_output_tokens=300))
        cancelled = False
        done: TurnDone | None = None
        async for ev in conn.events():
            if isinstance(ev, TextDelta) and not cancelled:
                cancelled = True  # mid-answer: the LLM is generating, TTS has begun
                await conn.cancel("long")
            elif isinstance(ev, TurnDone):
                done = ev
        assert done is not None and done.status == "cancelled" and "cancel_s" in done.timings
        assert "llm_s" not in done.timings, "the answer was written to its end: the cancel came too late"
        # The 300-token answer would run for ~8 s more; an aborted request leaves vLLM at once.
        assert await _vllm_idle(llm_url), "vLLM still generating: the request was not aborted"

        # A question SmolLM2 answers in words (its "Say hello." is emoji only about once in a hundred at
        # the default temperature: nothing to speak; tests/frameworks/test_openai_sdk_events.py).
        next_turn = TurnStart(turn_id="next", text="What is the capital of France?", max_output_tokens=30)
        after = await collect_turn(conn, next_turn)
        assert after.status == "completed" and after.error is None and after.audio and after.text
    finally:
        await conn.close()


async def test_cancel_while_speaking_a_clause(region: RunningRegion) -> None:
    conn = await RegionConnection.open(region.url, region=region.id)
    try:
        await conn.start(TurnStart(turn_id="speak", text=STORY, max_output_tokens=300))
        cancelled = False
        statuses: list[str] = []
        async for ev in conn.events():
            if isinstance(ev, TurnAdmitted):
                continue
            if isinstance(ev, ClauseAudio) and not cancelled:
                cancelled = True  # the second clause is being synthesised now
                await conn.cancel("speak")
            elif isinstance(ev, TurnDone):
                statuses.append(ev.status)
                assert "cancel_s" in ev.timings, ev.timings
        assert statuses == ["cancelled"]
    finally:
        await conn.close()


async def test_metrics_expose_stage_histograms_and_counters(region: RunningRegion) -> None:
    async with httpx.AsyncClient() as http:
        body = (await http.get(f"{region.url}/metrics", headers=region.headers())).text
        health = await http.get(f"{region.url}/health", headers=region.headers())
    for name in (
        "voicemesh_region_stt_seconds",
        "voicemesh_region_llm_ttft_seconds",
        "voicemesh_region_first_clause_seconds",
        "voicemesh_region_tts_first_audio_seconds",
        "voicemesh_region_turn_first_audio_seconds",
    ):
        assert f"{name}_bucket{{" in body and f"{name}_count" in body, name
    completed = re.search(r'voicemesh_region_turns_total\{status="completed"\} (\S+)', body)
    assert completed and float(completed.group(1)) >= 1
    assert "voicemesh_region_cancels_total" in body and "voicemesh_region_rejections_total" in body
    assert health.status_code == 200 and health.json()["status"] == "ready"


async def _vllm_idle(llm_url: str) -> bool:
    """vLLM runs no request within 10 s (the vLLM is shared: others' short requests may come and go)."""
    base = llm_url.rstrip("/").removesuffix("/v1")
    async with httpx.AsyncClient() as http:
        for _ in range(100):
            m = _RUNNING.search((await http.get(f"{base}/metrics")).text)
            if m and float(m.group(1)) == 0:
                return True
            await asyncio.sleep(0.1)
    return False


async def test_a_failed_over_turn_skips_stt_and_continues_the_answer(region: RunningRegion) -> None:
    heard = "The Moon is Earth's only natural satellite, and"
    start = TurnStart(
        turn_id="failover", transcript="Tell me about the Moon.", heard_text=heard, max_output_tokens=40,
        temperature=0.0,
    )  # fmt: skip
    result = await run_turn(region.url, start)
    assert result.status == "completed" and result.transcript == "Tell me about the Moon."
    assert "stt_s" not in result.timings  # the router's transcript was used
    assert result.text.strip() and not result.text.strip().startswith("The Moon is Earth's only")
    assert result.audio


async def test_a_dropped_connection_cancels_its_turn_and_frees_the_slot(
    region: RunningRegion, llm_url: str
) -> None:
    conn = await RegionConnection.open(region.url, region=region.id)
    await conn.start(TurnStart(turn_id="dropped", text=STORY, max_output_tokens=300))
    async for ev in conn.events():
        if isinstance(ev, TextDelta):
            break
    await conn.close()  # the edge went away mid-answer
    async with httpx.AsyncClient() as http:
        for _ in range(200):  # polls for up to 10 s: a busy machine may be slow to notice
            health = (await http.get(f"{region.url}/health", headers=region.headers())).json()
            if health["active"] == 0:
                break
            await asyncio.sleep(0.05)
    assert health["active"] == 0 and health["status"] == "ready", health
    assert await _vllm_idle(llm_url), "the dropped turn's LLM request is still running"
