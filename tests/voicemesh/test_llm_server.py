"""VllmServer's process handling: start, wait for /health, stop; a clear error when it dies starting.

vLLM itself is not what these tests are about (and takes a minute to start on CPU), so the runtime
here is a stand-in (``tests/voicemesh/vllm_stand_in.py``); the real vLLM is exercised by every test
that uses the ``llm_url`` fixture.
"""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.voicemesh.vllm_stand_in import stand_in_llm
from voicemesh.llm_server import LlmStartError, VllmServer
from voicemesh.processes import free_port, listening_pid


async def test_start_serves_and_stop_leaves_nothing(tmp_path: Path) -> None:
    lines: list[str] = []
    port = free_port()
    server = VllmServer(
        stand_in_llm(tmp_path), port=port, log_path=tmp_path / "vllm.log", report=lines.append
    )
    assert await server.start() == f"http://127.0.0.1:{port}/v1"
    pid = server.pid
    assert pid is not None and server.running and listening_pid(port) == pid
    await server.stop()
    assert not server.running and server.pid is None
    assert not psutil.pid_exists(pid) and listening_pid(port) is None
    assert any("ready at" in line for line in lines)
    assert "Starting vLLM API server" in (tmp_path / "vllm.log").read_text()


async def test_exit_while_starting_is_an_llm_start_error_with_the_log(tmp_path: Path) -> None:
    server = VllmServer(stand_in_llm(tmp_path, "--fail"), port=free_port(), log_path=tmp_path / "vllm.log")
    with pytest.raises(LlmStartError) as caught:
        await server.start()
    message = str(caught.value)
    assert caught.value.code == "llm_start_failed"
    assert "vLLM exited with code 7 while starting" in message
    assert "not enough memory for the KV cache" in message
    assert message.endswith("`voicemesh models verify`.")
    assert server.pid is None
