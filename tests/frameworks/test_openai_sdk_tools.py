"""Function calling with the stock ``openai`` SDK against a real edge, a real region and the real vLLM
(SmolLM2 on the cpu profile): a weather tool, a named ``tool_choice``, the spoken question answered
with a call, the call's output fed back, and the final answer spoken as audio.

SmolLM2-135M does not call tools on ``"auto"``: the first response names the function (the session's
``tool_choice``), and the one after the output asks for none (``response.create`` ``tool_choice:
"none"``), as OpenAI's own API needs when a session forces a call.
"""

from __future__ import annotations

import asyncio
import json
import wave
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.fixtures.common import SpeechFactory, run_example
from tests.fixtures.edge import RunningEdge
from voicemesh.realtime import Reply, collect_reply, connect, stream_audio
from wire.audio import FloatAudio
from wire.turn import Message

from .conftest import TURN_TIMEOUT_S

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"}},
        "required": ["city"],
    },
}
RESULT = {"city": "Paris", "sky": "sunny", "temperature_c": 24}
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_sdk_tools.py"


async def test_a_spoken_question_gets_a_call_and_the_output_gets_a_spoken_answer(
    edge: RunningEdge,
    say: Callable[[str], FloatAudio],
    transcribe: Callable[[bytes, int], Awaitable[str]],
) -> None:
    async with connect(edge.url, edge.api_key, max_retries=0) as conn:
        created = await conn.recv()
        session_id = created.session.model_extra["id"]
        await conn.session.update(
            session={
                "type": "realtime",
                "instructions": "You are a weather assistant. Answer in one short sentence.",
                "tools": [WEATHER],
                "tool_choice": {"type": "function", "name": "get_weather"},
            }
        )
        updated: Any = None
        async with asyncio.timeout(30):
            async for event in conn:
                if event.type in ("session.updated", "error"):
                    updated = event
                    break
        assert updated.type == "session.updated", updated
        assert updated.session.tool_choice.name == "get_weather"
        assert [t.name for t in updated.session.tools] == ["get_weather"]

        await stream_audio(conn, say("What is the weather like in Paris today?"), pace=0)
        first = await collect_reply(conn, Reply(), timeout_s=TURN_TIMEOUT_S)
        assert first.status == "completed", first.types
        (done,) = [e for e in first.events if e.type == "response.function_call_arguments.done"]
        assert done.name == "get_weather"
        arguments = json.loads(done.arguments)  # valid against the schema, or there were no call
        assert isinstance(arguments.get("city"), str) and arguments["city"]
        added = [
            e
            for e in first.events
            if e.type == "response.output_item.added" and e.item.type == "function_call"
        ]
        assert [a.item.call_id for a in added] == [done.call_id]
        response = next(e for e in first.events if e.type == "response.done").response
        calls = [o for o in response.output if o.type == "function_call"]
        assert [(c.call_id, c.name, c.arguments) for c in calls] == [
            (done.call_id, done.name, done.arguments)
        ]

        await conn.conversation.item.create(
            item={"type": "function_call_output", "call_id": done.call_id, "output": json.dumps(RESULT)}
        )
        await conn.response.create(response={"tool_choice": "none"})
        final = await collect_reply(conn, Reply(), timeout_s=TURN_TIMEOUT_S)
        # The question, the call, its output and the answer (removed when the socket closes).
        state = await edge.saved_state(session_id, messages=4)

    print(f"call {done.arguments}; answer: {final.text!r}")
    assert final.status == "completed", final.types
    assert not [e for e in final.events if e.type == "response.function_call_arguments.done"]
    assert final.audio and final.text.strip(), final.types  # the answer was spoken
    heard = await transcribe(bytes(final.audio), 24_000)
    assert heard.strip(), "the final answer's audio holds no speech"
    # The answer was written from the output: the region was given the call and its result.
    assert state is not None
    history = state.history
    call_msg = next(m for m in history if m.tool_calls)
    assert call_msg.tool_calls[0].id == done.call_id and call_msg.tool_calls[0].name == "get_weather"
    assert Message("tool", json.dumps(RESULT), tool_call_id=done.call_id) in history
    assert history[-1].role == "assistant" and history[-1].content == final.text.strip()


async def test_the_tools_example_runs_against_the_edge(
    edge: RunningEdge, speech: SpeechFactory, tmp_path: Path
) -> None:
    """``examples/openai_sdk_tools.py`` as a user runs it (its own process): a call, its output, the
    spoken answer in a WAV. (Here rather than in ``test_examples.py``: vLLM samples from one seeded
    stream, and a request more before LiveKit's barge-in test there lengthens that test's answer.)"""
    script = EXAMPLE
    out = tmp_path / "answer.wav"
    text = await run_example(
        script, str(speech("What is the weather in Paris?")), str(out), "--url", edge.url,
        "--key", edge.api_key, timeout_s=2 * TURN_TIMEOUT_S,
    )  # fmt: skip
    assert "error:" not in text and "[call get_weather(" in text, text
    with wave.open(str(out), "rb") as w:
        assert w.getframerate() == 24_000 and w.getnframes() > 0
