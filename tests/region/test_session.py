"""The turn session driven with real frames and no socket (region.testing), for protocol rules that
need no model: validation, stray frames, cancelling a turn whose audio has not come yet."""

from __future__ import annotations

import asyncio

import pytest

from region.node import RegionNode
from region.session import TurnSession
from region.settings import RegionSettings
from region.testing import MemoryChannel, run_frames
from voicemesh.profiles import cpu_profile
from wire.turn import TurnCancel, TurnDone, TurnError, TurnStart, encode


@pytest.fixture
def cold_node() -> RegionNode:
    """A node whose models are not loaded: anything reaching a model would fail the test."""
    p = cpu_profile()
    return RegionNode(
        RegionSettings(region_id="unit", stt=p.stt, llm=p.llm, tts=p.tts), "http://127.0.0.1:9/v1"
    )


async def test_errors_are_answered_in_order_and_the_session_goes_on(cold_node: RegionNode) -> None:
    frames: list[str | bytes] = [
        "{oops",
        b"\x00\x00",
        encode(TurnStart(turn_id="odd", audio_bytes=3)),
        b"\x00\x00\x00",  # the refused turn's audio: dropped quietly, not a second error
        encode(TurnStart(turn_id="rate", audio_bytes=4, sample_rate=44_100)),
        b"\x00\x00\x00\x00",
    ]
    sent = await run_frames(cold_node, frames, until=TurnError, count=4)
    errors = [m for m in sent if isinstance(m, TurnError)]
    assert [(e.code, e.turn_id) for e in errors] == [
        ("invalid_event", None),
        ("invalid_event", None),
        ("invalid_audio", "odd"),
        ("invalid_audio", "rate"),
    ]
    assert len(sent) == 4


async def test_cancelling_a_turn_whose_audio_has_not_come(cold_node: RegionNode) -> None:
    channel = MemoryChannel()
    task = asyncio.create_task(TurnSession(cold_node, channel).serve())
    channel.push(encode(TurnStart(turn_id="t", audio_bytes=32_000)))
    channel.push(encode(TurnCancel(turn_id="t")))
    channel.push(b"\x00\x00" * 16_000)  # arrives after the cancel: dropped
    sent = await channel.wait_for(TurnDone)
    channel.push(None)
    await task
    assert len(sent) == 1 and isinstance(sent[0], TurnDone) and sent[0].status == "cancelled"
    assert cold_node.admission.active == 0
