"""Pipecat's function-calling API with its stock ``OpenAIRealtimeLLMService`` against a real edge, a
real region and the real vLLM: a function registered with ``register_function`` is invoked with the
model's arguments, and its result is answered in speech.

The pipeline is Pipecat's own shape for it: ``LLMContextAggregatorPair`` around the service (the
assistant aggregator is what asks for the answer after a result), tools in the ``LLMContext``.
SmolLM2-135M calls no function on ``"auto"``, so the session asks for ``"required"`` (Pipecat's
session properties carry no named choice). Kept ``"required"``, every response would be another
call, as on OpenAI's API; so the function, once run, switches the session back to ``"auto"`` with
Pipecat's ``LLMUpdateSettingsFrame`` before it hands its result over: the honest route.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from tests.fixtures.edge import RunningEdge

from .conftest import TURN_TIMEOUT_S, Recorder, pipecat_service

RESULT = {"city": "Paris", "sky": "sunny", "temperature_c": 24}


async def test_a_registered_function_is_invoked_and_its_result_spoken(edge: RunningEdge) -> None:
    from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
    from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
    from pipecat.frames.frames import Frame, LLMRunFrame, LLMUpdateSettingsFrame, StartFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
    from pipecat.processors.frame_processor import FrameProcessor
    from pipecat.services.llm_service import FunctionCallParams
    from pipecat.services.openai.realtime import events
    from pipecat.services.openai.realtime.llm import OpenAIRealtimeLLMService
    from pipecat.workers.runner import WorkerRunner

    weather = FunctionSchema(
        name="get_weather",
        description="Get the current weather for a city.",
        properties={"city": {"type": "string", "description": "The city, e.g. Paris"}},
        required=["city"],
    )
    session = events.SessionProperties(
        instructions="You are a weather assistant. Answer in one short sentence.", tool_choice="required"
    )
    service = pipecat_service(
        edge.url, edge.api_key, settings=OpenAIRealtimeLLMService.Settings(session_properties=session)
    )
    invoked: list[dict[str, Any]] = []

    async def get_weather(params: FunctionCallParams) -> None:
        invoked.append(dict(params.arguments))
        answer_in_words = session.model_copy(update={"tool_choice": "auto"})
        await params.llm.queue_frame(
            LLMUpdateSettingsFrame(
                delta=OpenAIRealtimeLLMService.Settings(session_properties=answer_in_words)
            )
        )
        await params.result_callback(RESULT)

    service.register_function("get_weather", get_weather)
    context = LLMContext(
        messages=[{"role": "user", "content": "What is the weather in Paris?"}], tools=ToolsSchema([weather])
    )
    pair = LLMContextAggregatorPair(context)
    frames = Recorder()

    class Tap(FrameProcessor):
        async def process_frame(self, frame: Frame, direction: Any) -> None:
            await super().process_frame(frame, direction)
            if not isinstance(frame, StartFrame):
                await frames.add(frame)
            await self.push_frame(frame, direction)

    worker = PipelineWorker(
        Pipeline([pair.user(), service, Tap(), pair.assistant()]), cancel_on_idle_timeout=False
    )
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    task = asyncio.create_task(runner.run())

    def names(kind: str) -> list[Any]:
        return [f for f in frames.items if type(f).__name__ == kind]

    try:
        await worker.queue_frame(LLMRunFrame())
        # The call's response ends, then the answer to its result does.
        await frames.wait_for(lambda _: len(names("LLMFullResponseEndFrame")) >= 2, TURN_TIMEOUT_S)
    finally:
        await worker.cancel()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(30):
                await task

    assert names("ErrorFrame") == [], [str(f.error) for f in names("ErrorFrame")]
    assert len(invoked) == 1 and isinstance(invoked[0].get("city"), str), invoked
    spoken = "".join(f.text for f in names("TTSTextFrame")).strip()
    audio = sum(len(f.audio) for f in names("TTSAudioRawFrame"))
    assert spoken and audio > 0, "the result was not answered in speech"
    # Pipecat's context holds the call, its result and the spoken answer after them.
    roles = [m.get("role") for m in context.get_messages() if isinstance(m, dict)]
    assert roles[-3:] == ["assistant", "tool", "assistant"], roles
    print(f"invoked {invoked}; answer {spoken!r}")
