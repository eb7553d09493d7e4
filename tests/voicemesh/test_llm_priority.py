"""vLLM's scheduling priority (``LlmSettings.nice``): set on every thread of the process it starts,
read back from /proc, and ``renice_tree`` reaching every thread of a process tree.

vLLM itself is not what these tests are about, so its runtime is the stand-in of
``tests/voicemesh/vllm_stand_in.py``; ``renice_tree`` is tried on a plain Python process tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from tests.voicemesh.vllm_stand_in import stand_in_llm
from voicemesh.llm_server import VllmServer, renice_tree
from voicemesh.processes import free_port
from voicemesh.profiles import (
    CPU_LLM_DTYPE_ENV,
    FIRST_CHUNK_ENV,
    FIRST_CHUNK_WORDS,
    LLM_NICE_ENV,
    cpu_flags,
    cpu_profile,
    gpu_profile,
    load_profile,
    native_llm_dtype,
)


def thread_nices(pid: int) -> dict[int, int]:
    """Every thread's niceness, from field 19 of /proc/PID/task/TID/stat."""
    out: dict[int, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ", fields start at 3
        out[int(task.name)] = int(fields[19 - 3])
    return out


def tree_nices(pid: int) -> dict[int, int]:
    procs = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    return {tid: nice for p in procs for tid, nice in thread_nices(p).items()}


async def test_vllm_starts_at_the_settings_niceness(tmp_path: Path) -> None:
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    server = VllmServer(
        replace(stand_in_llm(tmp_path), nice=7), port=free_port(), log_path=tmp_path / "vllm.log"
    )
    await server.start()
    try:
        assert server.pid is not None
        assert set(thread_nices(server.pid).values()) == {min(19, mine + 7)}
    finally:
        await server.stop()


async def test_niceness_zero_leaves_vllm_at_ours(tmp_path: Path) -> None:
    server = VllmServer(stand_in_llm(tmp_path), port=free_port(), log_path=tmp_path / "vllm.log")
    assert server.command()[0] != "nice"
    await server.start()
    try:
        assert server.pid is not None
        assert set(thread_nices(server.pid).values()) == {os.getpriority(os.PRIO_PROCESS, 0)}
    finally:
        await server.stop()


_CHILD = (
    "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); print('up', flush=True)"
)
_TREE = f"""
import subprocess, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
subprocess.Popen([sys.executable, "-c", {_CHILD!r}], stdout=sys.stdout)
time.sleep(60)
"""


def test_renice_tree_reaches_every_thread_of_every_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _TREE], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"  # the child and its thread
        deadline = time.monotonic() + 30
        while len(tree_nices(proc.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)  # the parent's thread may still be starting
        before = tree_nices(proc.pid)
        assert len(before) >= 4  # two processes, two threads each
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert renice_tree(proc.pid, mine + 5) >= 4
        assert set(tree_nices(proc.pid).values()) == {mine + 5}
    finally:
        for p in [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]:
            p.kill()
        proc.wait()


def test_profiles_leave_vllm_level_and_cut_a_short_first_chunk_unless_told() -> None:
    for profile in (cpu_profile(), gpu_profile()):
        assert profile.llm.nice == 0 and profile.tts.first_chunk_words == FIRST_CHUNK_WORDS > 0


def test_both_levers_are_set_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LLM_NICE_ENV, "10")
    monkeypatch.setenv(FIRST_CHUNK_ENV, "0")
    for profile in (cpu_profile(), gpu_profile()):
        assert profile.llm.nice == 10 and profile.tts.first_chunk_words == 0


@pytest.mark.parametrize("value", ["20", "-1", "ten"])
def test_a_bad_niceness_is_refused_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(LLM_NICE_ENV, value)
    with pytest.raises(ValueError, match=f"{LLM_NICE_ENV} must be"):
        load_profile("cpu")


def test_the_cpu_profiles_llm_dtype_is_what_the_cpu_computes_natively_unless_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def dtype() -> str:
        args = list(cpu_profile().llm.vllm_args)
        return args[args.index("--dtype") + 1]

    assert dtype() == native_llm_dtype(cpu_flags())
    assert native_llm_dtype(frozenset({"avx2", "avx512f", "avx512_bf16"})) == "bfloat16"
    assert native_llm_dtype(frozenset({"avx2", "amx_tile", "amx_bf16"})) == "bfloat16"
    assert native_llm_dtype(frozenset({"avx2", "avx512f"})) == "float32"  # bf16 emulated: 5-6x slower
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 amx_bf16\n\nprocessor\t: 1\n")
    assert cpu_flags(cpuinfo) == {"fpu", "sse2", "avx2", "amx_bf16"}
    assert cpu_flags(tmp_path / "absent") == frozenset()  # not Linux: float32, always correct
    monkeypatch.setenv(CPU_LLM_DTYPE_ENV, "bfloat16")
    assert dtype() == "bfloat16"
    monkeypatch.setenv(CPU_LLM_DTYPE_ENV, "float32")
    assert dtype() == "float32"
    monkeypatch.setenv(CPU_LLM_DTYPE_ENV, "int4")
    with pytest.raises(ValueError, match=f"{CPU_LLM_DTYPE_ENV} must be one of bfloat16, float32"):
        load_profile("cpu")
