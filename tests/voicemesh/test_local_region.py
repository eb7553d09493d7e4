"""`voicemesh region serve` without --llm-url: vLLM started beside the region, and stopped with it.

The region is real (its STT and TTS load); its vLLM is the stand-in of ``vllm_stand_in.py``, because
what is under test is the composition (start, stop, a dying vLLM ends the region), not the LLM.
The stand-in answers only ``/health``, so the region keeps waiting for its LLM, never ready.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import psutil
import pytest

from region.settings import RegionSettings
from tests.voicemesh.vllm_stand_in import stand_in_llm
from voicemesh.llm_server import LlmStartError
from voicemesh.local_region import serve_local_region
from voicemesh.processes import free_port, listening_pid, wait_for
from voicemesh.profiles import cpu_profile


class _Started:
    """A region served in a task, with the ports of the region and its vLLM."""

    def __init__(self, tmp_path: Path) -> None:
        p = cpu_profile()
        self.port, self.llm_port = free_port(), free_port()
        settings = RegionSettings(
            region_id="local-test", stt=p.stt, llm=stand_in_llm(tmp_path), tts=p.tts, port=self.port
        )
        assert settings.llm.url is None
        self.lines: list[str] = []
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(
            serve_local_region(
                settings, stop=self.stop, report=self.lines.append, llm_port=self.llm_port,
                llm_log=tmp_path / "vllm.log",
            )
        )  # fmt: skip

    async def llm_ready(self) -> int:
        """The stand-in vLLM's pid, once it serves."""

        async def said_ready() -> None:
            assert any(line.startswith("vLLM: ready at") for line in self.lines), "not yet"
            assert not self.task.done(), "the region ended"

        await wait_for(said_ready, timeout_s=120, what="the region's vLLM")
        pid = listening_pid(self.llm_port)
        assert pid is not None and listening_pid(self.port) is not None
        return pid

    def nothing_left(self, llm_pid: int) -> None:
        assert listening_pid(self.port) is None and listening_pid(self.llm_port) is None
        assert not psutil.pid_exists(llm_pid) or psutil.Process(llm_pid).status() == psutil.STATUS_ZOMBIE


async def test_stop_ends_the_region_and_its_vllm(models: dict[str, Path], tmp_path: Path) -> None:
    region = _Started(tmp_path)
    llm_pid = await region.llm_ready()
    region.stop.set()
    await region.task  # no error: stopped as asked
    region.nothing_left(llm_pid)


async def test_a_dying_vllm_ends_the_region_with_an_llm_error(
    models: dict[str, Path], tmp_path: Path
) -> None:
    region = _Started(tmp_path)
    llm_pid = await region.llm_ready()
    psutil.Process(llm_pid).send_signal(signal.SIGKILL)
    with pytest.raises(LlmStartError, match="the region's vLLM exited with code -9"):
        await region.task
    region.nothing_left(llm_pid)
