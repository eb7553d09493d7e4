"""The turn session driven with real frames and no socket (region.testing) on the *real* backends,
not loaded, for protocol rules that need no model: validation, stray frames, cancelling a turn whose
audio has not come yet. Also: both profiles build their backends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from region.backends import build_stages
from region.llm import VllmClient
from region.node import RegionNode
from region.session import TurnSession
from region.settings import RegionSettings
from region.stt import Transcriber
from region.testing import MemoryChannel, run_frames
from region.tts import Synthesizer
from voicemesh.profiles import Profile, cpu_profile, gpu_profile
from wire.turn import TurnCancel, TurnDone, TurnError, TurnStart, encode


@pytest.fixture
def cold_node() -> RegionNode:
    """A node whose models are not loaded: anything reaching a model would fail the test."""
    p = cpu_profile()
    return RegionNode.from_settings(
        RegionSettings(region_id="unit", stt=p.stt, llm=p.llm, tts=p.tts), "http://127.0.0.1:9/v1"
    )


@pytest.mark.parametrize("profile", [cpu_profile, gpu_profile], ids=["cpu", "gpu"])
async def test_both_profiles_build_the_real_backends_without_loading_them(
    profile: Callable[[], Profile],
) -> None:
    p = profile()
    stages = build_stages(RegionSettings(region_id="unit", stt=p.stt, llm=p.llm, tts=p.tts), "http://h:1/v1/")
    try:
        assert isinstance(stages.stt, Transcriber) and stages.stt.settings == p.stt
        assert isinstance(stages.tts, Synthesizer) and stages.tts.settings == p.tts
        assert isinstance(stages.llm, VllmClient) and stages.llm.settings == p.llm
        assert stages.llm.url == "http://h:1/v1"
        assert not (stages.stt.ready or stages.tts.ready or stages.llm.ready)
    finally:
        await stages.llm.aclose()


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
