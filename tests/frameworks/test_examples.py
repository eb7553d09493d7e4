"""The README's "works with" examples (``examples/``) run as a user runs them, as scripts in their
own process, against a real edge and region: each greets, answers a spoken question and writes
the answers' audio to a WAV."""

from __future__ import annotations

import wave
from pathlib import Path

import pytest

from tests.fixtures.common import SpeechFactory, run_example
from tests.fixtures.edge import RunningEdge

from .conftest import QUESTION, TURN_TIMEOUT_S

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("script", "url_of"),
    [
        ("openai_sdk.py", lambda e: e.url),
        ("pipecat_pipeline.py", lambda e: e.url),
        ("livekit_agent.py", lambda e: f"{e.http_url}/v1"),
    ],
)
async def test_example_runs_against_the_edge(
    edge: RunningEdge, speech: SpeechFactory, tmp_path: Path, script: str, url_of: object
) -> None:
    url = url_of(edge)  # type: ignore[operator]
    out = tmp_path / "answer.wav"
    text = await run_example(
        EXAMPLES / script, str(speech(QUESTION)), str(out), "--url", url, "--key", edge.api_key,
        timeout_s=2 * TURN_TIMEOUT_S,
    )  # fmt: skip
    assert "error:" not in text, text  # each example prints the server's error events so
    with wave.open(str(out), "rb") as w:
        assert w.getframerate() == 24_000 and w.getnframes() > 0
