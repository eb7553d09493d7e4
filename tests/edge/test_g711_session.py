"""Telephony sessions: ``audio/pcmu`` and ``audio/pcma`` (G.711 at 8 kHz) in and out.

A session set to G.711 takes 20 ms frames of it (as a phone gateway sends them), finds the turn with
the same positions as the same audio in 24 kHz PCM, sends the region the same 16 kHz audio, and
answers in G.711 deltas of 100 ms that decode to the region's audio at 8 kHz.

Fast tier: ``edge.testing`` stand-ins (``EnergyVad`` for Silero, ``ScriptedRouter`` for the regions:
the audio path at the edge is what is under test, not a model).
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest

from edge.realtime.input_turns import TAIL_MS
from edge.testing import ScriptedRouter, SessionHarness, clause, memory_services, spoken_reply
from router.api import Routed
from wire.audio import (
    CLIENT_RATE,
    G711_RATE,
    FloatAudio,
    G711Law,
    float_to_g711,
    float_to_pcm16,
    g711_to_float,
)
from wire.turn import TurnDone

LAWS: dict[str, G711Law] = {"audio/pcmu": "ulaw", "audio/pcma": "alaw"}
SPEECH = [(0.3, 0.0), (0.6, 0.3), (0.8, 0.0)]
"""``(seconds, amplitude)`` of the user's turn: silence, a tone burst (speech to ``EnergyVad``), silence."""


def _signal(rate: int, parts: list[tuple[float, float]] = SPEECH, hz: float = 440.0) -> FloatAudio:
    pieces = []
    for seconds, amplitude in parts:
        t = np.arange(int(seconds * rate), dtype=np.float32) / rate
        pieces.append((amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32))
    return np.concatenate(pieces)


def _update(**audio: dict[str, Any]) -> dict[str, Any]:
    return {"type": "session.update", "session": {"type": "realtime", "audio": audio}}


def _format(type_: str) -> dict[str, Any]:
    return {"format": {"type": type_}}


async def _append(edge: SessionHarness, data: bytes, frame_bytes: int) -> None:
    for off in range(0, len(data), frame_bytes):
        audio = base64.b64encode(data[off : off + frame_bytes]).decode()
        await edge.send({"type": "input_audio_buffer.append", "audio": audio})


def _deltas(edge: SessionHarness) -> list[bytes]:
    return [base64.b64decode(e["delta"]) for e in edge.of_type("response.output_audio.delta")]


async def _spoken_turn(fmt: str) -> tuple[SessionHarness, ScriptedRouter]:
    """One VAD turn with ``SPEECH`` sent in ``fmt`` (20 ms frames), answered by two 0.1 s clauses."""
    router = ScriptedRouter(spoken_reply("Hello there. How are you?"))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(input=_format(fmt), output=_format(fmt)))
        assert edge.sent[-1]["type"] == "session.updated", edge.sent[-1]
        if fmt == "audio/pcm":
            await _append(edge, float_to_pcm16(_signal(CLIENT_RATE)), frame_bytes=2 * CLIENT_RATE // 50)
        else:
            await _append(edge, float_to_g711(_signal(G711_RATE), LAWS[fmt]), frame_bytes=G711_RATE // 50)
        await edge.wait_for("response.done")
    return edge, router


def _dominant_hz(samples: FloatAudio, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


@pytest.mark.parametrize("fmt", ["audio/pcmu", "audio/pcma"])
async def test_g711_turn_in_and_out(fmt: str) -> None:
    edge, router = await _spoken_turn(fmt)
    pcm_edge, pcm_router = await _spoken_turn("audio/pcm")

    # The session echoes the formats as the OpenAI API names them, and keeps them.
    updated = edge.of_type("session.updated")[0]["session"]["audio"]
    assert updated["input"]["format"] == {"type": fmt} and updated["output"]["format"] == {"type": fmt}
    assert (edge.state.input_audio_format, edge.state.output_audio_format) == (fmt, fmt)

    # The VAD sees the speech and its end where it sees them in 24 kHz PCM (within one 32 ms chunk).
    def positions(h: SessionHarness) -> tuple[int, int]:
        started = h.of_type("input_audio_buffer.speech_started")
        stopped = h.of_type("input_audio_buffer.speech_stopped")
        assert len(started) == len(stopped) == 1
        return started[0]["audio_start_ms"], stopped[0]["audio_end_ms"]

    (start, end), (pcm_start, pcm_end) = positions(edge), positions(pcm_edge)
    assert 0 <= start < 300 < 900 < end
    assert abs(start - pcm_start) <= 32 and abs(end - pcm_end) <= 32
    # The region gets the turn at 16 kHz PCM16: as long as the turn and its quiet tail, with the
    # tone in it.
    (turn,) = router.turns
    assert turn.audio is not None and len(turn.audio) == 2 * 16 * (end + TAIL_MS - start)
    heard = np.frombuffer(turn.audio, dtype="<i2").astype(np.float32) / 32768.0
    assert _dominant_hz(heard, 16_000) == pytest.approx(440, abs=5)
    assert abs(len(turn.audio) - len(pcm_router.turns[0].audio or b"")) <= 2 * 16 * 32

    # The answer: G.711 at 8 kHz, one 100 ms delta for each 0.1 s clause, the region's tone.
    deltas = _deltas(edge)
    assert [len(d) for d in deltas] == [800, 800]
    assert [len(d) for d in _deltas(pcm_edge)] == [4800, 4800]  # (the same 100 ms deltas as in PCM)
    audio = g711_to_float(b"".join(deltas), LAWS[fmt])
    assert _dominant_hz(audio, G711_RATE) == pytest.approx(440, abs=20)
    assert np.sqrt(np.mean(audio[100:-100] ** 2)) == pytest.approx(0.3 / np.sqrt(2), rel=0.05)
    assert edge.of_type("response.done")[0]["response"]["status"] == "completed"


@pytest.mark.parametrize("fmt", ["audio/pcmu", "audio/pcma"])
async def test_output_has_no_clicks_at_chunk_boundaries(fmt: str) -> None:
    """A 1 s clause goes out in ten deltas; decoded end to end it is the same sine at 8 kHz, each
    sample off by no more than G.711's quantisation allows for its value (~3.5% of it, a few units
    near zero: ``tests/wire/test_g711.py``). A resampler restarted per chunk breaks this ~8-fold at
    the chunk boundaries, which fall on the sine's zero crossings, where steps are finest."""
    router = ScriptedRouter(
        [
            Routed(region="scripted"),
            clause("A long one.", seconds=1.0),
            clause("Short.", index=1, seconds=0.25),
            TurnDone(turn_id="turn", region="scripted", status="completed", text="A long one."),
        ]
    )
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(output=_format(fmt)))
        await edge.say("Say something long.")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    deltas = _deltas(edge)
    # Each clause is all sent before the next (as in PCM: 100 ms deltas, a clause's last one shorter).
    assert [len(d) for d in deltas] == [800] * 10 + [800, 800, 400]
    audio = g711_to_float(b"".join(deltas[:10]), LAWS[fmt])
    ideal = _signal(G711_RATE, [(1.0, 0.3)])
    allowed = 0.036 * np.abs(ideal) + 40 / 32768
    inner = slice(80, -80)  # (the tone's own abrupt start and end ring for a few ms)
    assert np.all(np.abs(audio - ideal)[inner] <= allowed[inner])


async def test_commit_minimum_and_buffered_ms_count_g711_time() -> None:
    """Without VAD the client commits; 100 ms is the minimum, counted in the audio's time (8 kHz
    G.711 is 8 bytes a ms), including what the resampler still holds."""
    router = ScriptedRouter(spoken_reply("Heard you."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(input={"format": {"type": "audio/pcmu"}, "turn_detection": None}))
        burst = float_to_g711(_signal(G711_RATE, [(0.12, 0.3)]), "ulaw")
        await _append(edge, burst[:640], frame_bytes=160)  # 80 ms
        assert edge.session.turns.audio.buffered_ms == 80
        await edge.send({"type": "input_audio_buffer.commit"})
        assert edge.sent[-1]["error"]["code"] == "input_audio_buffer_commit_empty"
        await _append(edge, burst[640:], frame_bytes=160)  # 120 ms in all
        assert edge.session.turns.audio.buffered_ms == 120
        await edge.send({"type": "input_audio_buffer.commit"})
        assert len(edge.of_type("input_audio_buffer.committed")) == 1
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    (turn,) = router.turns
    assert turn.audio is not None and len(turn.audio) == 2 * 16 * 120  # every sample, at 16 kHz


async def test_bad_format_is_refused_naming_the_param_and_changes_nothing() -> None:
    async with SessionHarness(memory_services()) as edge:
        await edge.send(_update(input=_format("audio/pcmu")))
        await edge.send(_update(input=_format("audio/g729"), output=_format("audio/pcma")))
        error = edge.sent[-1]
        assert error["type"] == "error"
        assert "audio.input.format" in error["error"]["param"]
        assert (edge.state.input_audio_format, edge.state.output_audio_format) == (
            "audio/pcmu",
            "audio/pcm",
        )
        assert edge.session.turns.audio.audio_format.type == "audio/pcmu"
        # PCM is 24 kHz only, as in the OpenAI API.
        await edge.send(_update(output={"format": {"type": "audio/pcm", "rate": 8000}}))
        assert "audio.output.format" in edge.sent[-1]["error"]["param"]
        assert len(edge.of_type("session.updated")) == 1
