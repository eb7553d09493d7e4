"""The append hot path (issue 15, edge capacity): ``read_append`` takes only frames the full path
accepts, with the same audio and ``event_id``; whatever it declines still gets the full path's
error; the input buffer that no longer copies itself on each append holds what concatenation did;
and the VAD batcher reads each chunk before its session's buffer is reused."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edge.audio import turn_audio
from edge.audio.input_audio import InputAudio, _Samples
from edge.audio.vad import VadBatcher
from edge.shared.events import read_append, read_client_frame, validate_client_event
from edge.shared.protocols import CHUNK
from edge.testing import (
    EnergyVad,
    ScriptedRouter,
    SessionHarness,
    memory_services,
    silence,
    spoken_reply,
    tone,
)
from wire.audio import read_wav
from wire.errors import ProtocolError

_PCM = base64.b64encode(bytes(range(256)) * 4).decode()


def _append(**fields: Any) -> str:
    return json.dumps({"type": "input_audio_buffer.append", **fields})


FRAMES: list[str | bytes] = [
    _append(audio=_PCM),
    _append(audio=_PCM, event_id="evt_1"),
    _append(audio=""),
    _append(audio="AAA="),
    _append(audio="AB=="),
    _append(audio="AAAA===="),  # strict base64 takes extra padding; msgspec does not
    _append(audio="AA=A"),
    _append(audio="=AAA"),
    _append(audio="AAA"),
    _append(audio="AA AA"),
    _append(audio="AAAA\n"),
    _append(audio="-_-_"),
    _append(audio="AAAÉ"),
    _append(audio=12),
    _append(audio=None),
    _append(),
    _append(audio=_PCM, event_id=7),
    _append(audio=_PCM, event_id="x" * 513),
    _append(audio=_PCM, event_id="évt"),
    _append(audio=_PCM, extra={"n": 1}),
    '{"type": "input_audio_buffer.append", "audio": "AAAA", "event_id": "\\ud800"}',
    '{"type": "input_audio_buffer.append", "audio": "AAAA", "audio": "AA=="}',
    '{"type": "input_audio_buffer.append", "audio": "AAAA"} trailing',
    '{"type": "input_audio_buffer.append", "audio": "AAAA", "n": NaN}',
    '{"type": "input_audio_buffer.append", "type": "input_audio_buffer.clear", "audio": "AAAA"}',
    '["input_audio_buffer.append"]',
    _append(audio=_PCM).encode(),
    b"\xff" + _append(audio=_PCM).encode(),
    json.dumps({"type": "input_audio_buffer.clear", "event_id": "input_audio_buffer.append"}),
]


def _full_path(raw: str | bytes) -> tuple[bytes, str | None] | str:
    """What the edge did before the fast path: the audio and event_id, or the error's code."""
    try:
        data = read_client_frame(raw)
        event, type_ = validate_client_event(data)
    except ProtocolError as exc:
        return exc.code
    if type_ != "input_audio_buffer.append":
        return type_
    try:
        audio = base64.b64decode(event.audio, validate=True)  # type: ignore[union-attr]
    except (binascii.Error, ValueError):
        return "invalid_audio"
    return audio, event.event_id


@pytest.mark.parametrize("raw", FRAMES, ids=range(len(FRAMES)))
def test_fast_path_takes_only_what_the_full_path_accepts_alike(raw: str | bytes) -> None:
    fast = read_append(raw)
    if fast is not None:
        assert fast == _full_path(raw)


def test_fast_path_takes_plain_appends() -> None:
    """The frames a streaming client sends are the ones it is for."""
    assert read_append(FRAMES[0]) == (base64.b64decode(_PCM), None)
    assert read_append(FRAMES[1]) == (base64.b64decode(_PCM), "evt_1")
    assert read_append(_append(audio=_PCM).encode()) is not None


async def test_declined_and_failing_appends_get_the_full_paths_errors() -> None:
    """Each bad append gets an ``error`` naming the problem, its ``event_id`` echoed where it can
    be, and the session goes on."""
    odd = base64.b64encode(b"\x01\x02\x03").decode()  # valid base64, but not whole PCM16 samples
    cases = [
        (_append(audio="%%%", event_id="e1"), "invalid_audio", "e1"),
        (_append(audio=12, event_id="e2"), "invalid_value", "e2"),
        (_append(event_id="e3"), "invalid_value", "e3"),
        (_append(audio=odd, event_id="e4"), "invalid_audio", "e4"),  # taken by the fast path
        ('{"type": "input_audio_buffer.append", "audio": "AAAA"', "invalid_json", None),
    ]
    async with SessionHarness(memory_services()) as harness:
        for raw, code, event_id in cases:
            await harness.send(raw)
            error = harness.sent[-1]
            assert error["type"] == "error", (raw, error)
            assert error["error"]["code"] == code and error["error"]["event_id"] == event_id, error
            assert error["error"]["message"]
        await harness.send(FRAMES[1])  # a good one is still taken
        await harness.send({"type": "input_audio_buffer.clear"})
        assert harness.sent[-1]["type"] == "input_audio_buffer.cleared"


def test_input_buffer_holds_what_concatenation_held() -> None:
    rng = np.random.default_rng(15)
    samples, reference = _Samples(), np.zeros(0, dtype=np.float32)
    for _ in range(5000):
        if rng.random() < 0.6:
            more = rng.standard_normal(int(rng.integers(0, 2000))).astype(np.float32)
            samples.extend(more)
            reference = np.concatenate([reference, more])
        else:
            n = int(rng.integers(0, 3000))
            samples.drop(n)
            reference = reference[n:]
        assert len(samples) == len(reference)
        np.testing.assert_array_equal(samples.view, reference)


async def test_batcher_reads_chunks_before_their_buffer_is_reused(
    models: dict[str, Path], speech: Callable[..., Path]
) -> None:
    """Sessions hand the batcher views of their input buffer, reused once the append returns: the
    probabilities (and each stream's context) must be those of an untouched copy."""
    samples, _ = read_wav(speech("Turn on the kitchen lights, please.", rate=24_000))
    chunks = samples[: len(samples) // CHUNK * CHUNK].reshape(-1, CHUNK)
    batcher = VadBatcher(str(models["silero-vad"] / "silero_vad.onnx"))
    try:

        async def run(reuse: bool) -> list[float]:
            stream, buffer, probs = batcher.stream(), np.empty(CHUNK, dtype=np.float32), []
            for chunk in chunks:
                buffer[:] = chunk
                probs.append(await stream.probability(buffer if reuse else chunk.copy()))
                buffer[:] = 0.0  # the session's buffer moves on
            return probs

        reused, fresh = await asyncio.gather(run(True), run(False))
        np.testing.assert_allclose(reused, fresh, atol=1e-5)
        assert max(fresh) > 0.8  # speech was found: the comparison is not of two silences
    finally:
        await batcher.aclose()


def _counting_resamples(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length (24 kHz samples) of each span ``TurnAudio`` resamples from now on."""
    calls: list[int] = []
    resampled = turn_audio._pcm16k

    def counted(samples: np.ndarray) -> bytes:
        calls.append(len(samples))
        return resampled(samples)

    monkeypatch.setattr(turn_audio, "_pcm16k", counted)
    return calls


async def test_the_buffer_holds_24_khz_and_gives_a_turn_at_16_khz_once_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PCM is buffered as it comes; a turn is resampled when its 16 kHz audio is first asked for,
    not when it is taken or peeked; a span peeked at a pause and then taken is resampled once."""
    calls = _counting_resamples(monkeypatch)
    audio = InputAudio(EnergyVad().stream(), None, max_buffer_s=10)
    audio.append(tone(1.0))
    assert audio.buffered_ms == 1000
    unasked = audio.peek(0, 300)
    peeked = audio.peek(0, 500)
    assert calls == []  # nothing asked for 16 kHz yet: nothing resampled
    assert len(peeked.pcm16k()) == 2 * 8000  # 500 ms at 16 kHz, PCM16
    taken = audio.take(0, 500)
    assert taken is peeked and taken.pcm16k() is peeked.pcm16k()  # the same bytes: resampled once
    assert calls == [500 * 24] and len(unasked) == 300 * 24
    rest = audio.take()
    assert audio.buffered_ms == 0
    for _ in range(3):
        audio.append(tone(0.5))  # the buffer moves on over the memory the taken turn came from
    pcm = rest.pcm16k()
    assert len(pcm) == 2 * 8000
    # Samples at 16 kHz of the 440 Hz tone: zero crossings say the rate is right (~880 per second).
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    crossings = int(np.sum(np.signbit(samples[1:]) != np.signbit(samples[:-1])))
    assert 430 <= crossings <= 450


async def test_a_grown_span_is_resampled_from_near_its_last_end_only(
    speech: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn whose audio was asked for at each of its pauses, then taken: each time only the new
    audio (and 40 ms before it) is resampled, and the turn is what resampling it whole gives, to
    1 LSB."""
    samples, _ = read_wav(speech("Turn on the kitchen lights, please, and then the hall.", rate=24_000))
    whole_ms = len(samples) // 24
    audio, reference = (
        InputAudio(EnergyVad().stream(), None, max_buffer_s=30),
        InputAudio(EnergyVad().stream(), None, max_buffer_s=30),
    )
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()
    audio.append(pcm)
    reference.append(pcm)
    calls = _counting_resamples(monkeypatch)
    pauses = [700, 1401, whole_ms // 2, whole_ms - 301]
    for end_ms in pauses:
        audio.peek(37, end_ms).pcm16k()
    grown = audio.take(37, whole_ms).pcm16k()
    expected = reference.take(37, whole_ms).pcm16k()
    got, want = np.frombuffer(grown, "<i2").astype(int), np.frombuffer(expected, "<i2").astype(int)
    assert len(got) == len(want)
    assert np.abs(got - want).max() <= 1 and (got != want).mean() < 1e-3
    assert np.abs(want).max() > 3000  # speech: not a comparison of two silences
    # the first peek whole, each next one its new audio plus twice the splice (20 ms at 24 kHz)
    calls = calls[:-1]  # (the reference's, whole)
    assert len(calls) == 5 and calls[0] == (700 - 37) * 24
    assert all(
        n <= (end - start) * 24 + 2 * 480 + 3
        for n, start, end in zip(calls[1:], pauses, [*pauses[1:], whole_ms], strict=True)
    )


async def test_a_span_grown_from_one_never_resampled_is_resampled_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Carrying on needs the earlier span's 16 kHz audio: without it the grown span is resampled
    whole, once, and is the same as a span never peeked."""
    audio = InputAudio(EnergyVad().stream(), None, max_buffer_s=10)
    reference = InputAudio(EnergyVad().stream(), None, max_buffer_s=10)
    for a in (audio, reference):
        a.append(tone(1.0))
    calls = _counting_resamples(monkeypatch)
    audio.peek(0, 400)  # nobody asks for it (create_response off: no answer is started at a pause)
    taken = audio.take(0, 900).pcm16k()
    assert calls == [900 * 24]
    assert taken == reference.take(0, 900).pcm16k()


def _append_frame(pcm: bytes) -> str:
    return _append(audio=base64.b64encode(pcm).decode())


async def test_an_append_returns_before_the_vad_hears_it() -> None:
    """VAD answers are pushed to the session, not awaited by its append (no future, no wake-up of
    the session's task per chunk): the append is buffered when ``handle`` returns, heard after."""
    async with SessionHarness(memory_services()) as h:
        await h.session.handle(_append_frame(tone(0.1)))
        audio = h.session.turns.audio
        assert audio.buffered_ms == 100 and audio._in_vad  # pushed, not heard yet
        await h.session.turns.settled()
        assert not audio._in_vad and audio._vad_pos == 3 * CHUNK  # 100 ms: three whole chunks heard


async def test_an_event_after_audio_comes_after_what_that_audio_started_and_stopped() -> None:
    """The client's order holds although the VAD answers later: a clear sent right after the audio
    of a whole turn is handled once that turn was called and committed, not before."""
    async with SessionHarness(memory_services()) as h:
        for off in range(0, 2 * 24_000 * 16 // 10, 2 * 2400):  # tone 0.6 s + silence 1.0 s, 100 ms frames
            await h.session.handle(_append_frame((tone(0.6) + silence(1.0))[off : off + 2 * 2400]))
        await h.session.handle(json.dumps({"type": "input_audio_buffer.clear"}))
        await h.session.turns.settled()
        kinds = [e["type"] for e in h.sent if e["type"].startswith("input_audio_buffer.")]
        assert kinds == [
            "input_audio_buffer.speech_started",
            "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed",
            "input_audio_buffer.cleared",
        ]


class _FailingOnce(EnergyVad):
    """``EnergyVad`` whose first chunk fails, as a model call can."""

    def stream(self) -> Any:
        inner, vad = super().stream(), self

        class _Stream:
            def push(self, source: Any) -> None:
                if vad.chunks == 0:
                    vad.chunks += 1
                    asyncio.get_running_loop().call_soon(source.failed, RuntimeError("model call failed"))
                else:
                    inner.push(source)

        return _Stream()


async def test_a_vad_failure_is_an_error_event_and_the_session_goes_on() -> None:
    async with SessionHarness(memory_services(vad=_FailingOnce())) as h:
        await h.append_audio(tone(0.6) + silence(1.0))
        [error] = h.of_type("error")
        assert error["error"]["code"] == "server_error", error
        # the chunk that failed is pushed again with the next audio: the turn is still heard
        assert h.of_type("input_audio_buffer.speech_started") and h.of_type("input_audio_buffer.committed")


async def test_answers_after_the_session_closed_are_dropped() -> None:
    h = SessionHarness(memory_services())
    async with h:
        await h.session.handle(_append_frame(tone(0.6)))
        audio = h.session.turns.audio
        assert audio._in_vad
    sent = len(h.sent)
    await asyncio.sleep(0.05)  # the VAD's answer arrives now: nothing may come of it
    assert audio.closed and len(h.sent) == sent and not audio.events


async def test_a_turn_nobody_takes_is_never_resampled_and_one_taken_later_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Server VAD with ``create_response`` off and no transcription: the turn is called, committed
    and not resampled (nothing sends it anywhere); a ``response.create`` then sends the region the
    turn's 16 kHz audio, resampled then, once."""
    calls = _counting_resamples(monkeypatch)
    router = ScriptedRouter(spoken_reply("Hello."))
    async with SessionHarness(memory_services(router)) as h:
        await h.turn_detection(type="server_vad", create_response=False)
        await h.append_audio(tone(0.6) + silence(0.8))
        await h.wait_for("input_audio_buffer.committed")
        await h.session.turns.settled()
        assert calls == [] and router.turns == []
        await h.send({"type": "response.create"})
        await h.wait_for("response.done")
    assert len(calls) == 1 and len(router.turns) == 1
    audio = router.turns[0].audio
    assert (
        audio is not None and 2 * 16 * 600 <= len(audio) <= 2 * 16 * 1200
    )  # the tone and its padding, 16 kHz
