"""A region node's start-up on stand-in models: each model warmed and reported, the LLM waited for,
and ``/health`` saying starting, ready or failed (what the router reads)."""

from __future__ import annotations

import pytest

from region.protocols import LlmError
from region.settings import AdmissionSettings
from region.testing import ScriptedLlm, standin_node


class LateLlm(ScriptedLlm):
    """A stand-in LLM server that is still starting: refuses ``failures`` loads, then serves."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.ready = False
        self.failures = failures

    async def load(self) -> None:
        if self.failures:
            self.failures -= 1
            raise LlmError("connection refused")
        self.ready = True


async def test_warm_up_waits_for_the_llm_and_reports_each_model_once() -> None:
    lines: list[str] = []
    node = standin_node(llm=LateLlm(failures=1), report=lines.append)
    status, body = node.health()
    assert (status, body["status"], body["models"]["llm"]) == (503, "starting", False)

    await node.warm_up()

    assert [line.split(" (")[0] for line in lines] == [
        "region stand-in: STT warm",
        "region stand-in: TTS warm",
        "region stand-in: waiting for the LLM at memory://scripted-llm",
        "region stand-in: LLM warm at memory://scripted-llm",
    ]
    assert "(connection refused)" in lines[2]
    status, body = node.health()
    assert (status, body["status"]) == (200, "ready") and "error" not in body
    assert body["models"] == {"stt": True, "llm": True, "tts": True}
    assert body["voices"] == ["hum", "tone"] and body["llm_url"] == "memory://scripted-llm"
    slots = AdmissionSettings().max_concurrent
    assert (body["capacity"], body["free_slots"], body["queue_depth"], body["load"]) == (slots, slots, 0, 0.0)


async def test_an_llm_that_never_comes_fails_the_node_with_its_reason() -> None:
    node = standin_node(llm=LateLlm(failures=10**6))
    with pytest.raises(LlmError, match="connection refused"):
        await node.warm_up(llm_wait_s=0.01)
    status, body = node.health()
    assert (status, body["status"], body["error"]) == (503, "failed", "connection refused")
