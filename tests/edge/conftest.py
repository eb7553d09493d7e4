"""Shared set-ups for the edge tests: one real region, edges in front of it (or of nothing)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_asyncio

from tests.fixtures.common import free_port
from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RegionFactory
from wire.audio import CLIENT_RATE, FloatAudio, read_wav


@pytest_asyncio.fixture(scope="session")
async def edge(edge_factory: EdgeFactory, region_factory: RegionFactory) -> RunningEdge:
    """An edge in front of one real region (Whisper -> vLLM -> Kokoro)."""
    region = region_factory("edge-test", max_concurrent=2, max_queue=4, keep=True)
    return await edge_factory([region], keep=True)


@pytest_asyncio.fixture(scope="session")
async def lonely_edge(edge_factory: EdgeFactory) -> RunningEdge:
    """An edge whose only region is a port nobody listens on: every turn degrades to Piper."""
    return await edge_factory(
        [("nowhere", f"http://127.0.0.1:{free_port()}")],
        hold_message="Sorry, no region can answer right now.",
        keep=True,
    )


@pytest.fixture(scope="session")
def say(speech: Callable[..., Path]) -> Callable[[str], FloatAudio]:
    """``say(text)`` -> espeak-ng speech at the client rate (24 kHz float32)."""

    def make(text: str) -> FloatAudio:
        samples, rate = read_wav(speech(text, rate=CLIENT_RATE))
        assert rate == CLIENT_RATE
        return samples

    return make


def rms(pcm16: bytes) -> float:
    x = np.frombuffer(pcm16, dtype="<i2").astype(np.float32) / 32768.0
    return float(np.sqrt(np.mean(x**2))) if len(x) else 0.0


def session_id(created: Any) -> str:
    """The edge's session id, carried in ``session.created`` as an extra field the SDK keeps."""
    assert created.type == "session.created"
    return str(created.session.model_extra["id"])
