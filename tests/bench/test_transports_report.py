"""``voicemesh bench transports``' measure of first audio heard, alike for every transport, and its table."""

from __future__ import annotations

import numpy as np

from voicemesh.bench.transports import TransportSample, format_transports, heard_onset

RATE = 1000


def _chunk(t: float, loud_at: int | None, n: int = 100) -> tuple[float, np.ndarray]:
    samples = np.zeros(n, dtype=np.float32)
    if loud_at is not None:
        samples[loud_at:] = 0.5
    return t, samples


def test_onset_inside_a_chunk_counts_from_its_arrival() -> None:
    assert heard_onset([_chunk(10.0, 40)], RATE, since=9.0) == 10.04


def test_chunks_ahead_of_playback_play_after_the_previous_one() -> None:
    # A WebSocket client gets 100 ms of silence and, at once, the loud chunk: it hears the loud one
    # only after the silence has played.
    chunks = [_chunk(10.0, None), _chunk(10.001, 0)]
    assert heard_onset(chunks, RATE, since=9.0) == 10.1


def test_chunks_before_the_end_of_speech_and_silence_are_not_the_answer() -> None:
    assert heard_onset([_chunk(8.0, 0), _chunk(9.5, None)], RATE, since=9.0) is None


def test_table_gives_each_transport_as_a_ratio_of_the_websocket() -> None:
    samples = [
        TransportSample("websocket", 0, 1.0),
        TransportSample("websocket", 1, 1.0),
        TransportSample("webrtc", 0, 1.5),
        TransportSample("webrtc", 1, 1.5),
        TransportSample("twilio", 0, 2.0),
        TransportSample("twilio", 1, None, "no audio above the speech floor"),
    ]
    rows = {line.split("|")[1].strip(): line for line in format_transports(samples).splitlines()[2:]}
    assert "| 2 | 2 | 1.500 | 1.500 | 1.50 | 1.50 |" in rows["webrtc"]
    assert "| 2 | 1 | 2.000 | 2.000 | 2.00 | 2.00 |" in rows["twilio"]
