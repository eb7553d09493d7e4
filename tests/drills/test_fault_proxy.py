"""The fault proxy on real loopback sockets: pass-through, added latency, cuts, downtime.

Timing is asserted only where it is the behaviour under test (the latency the proxy adds), and
then only as bounds a loaded machine cannot break: a delay is never shorter than the one asked
for, and "not throttled" is checked against what throttling would cost (ten times the latency),
not against how fast this machine happens to be.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.fixtures.drills import EchoServer
from voicemesh.drills.faults import FaultProxy


async def _round_trip(port: int, payload: bytes = b"ping") -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        t0 = time.perf_counter()
        writer.write(payload)
        await writer.drain()
        got = await asyncio.wait_for(reader.readexactly(len(payload)), 30)
        assert got == payload
        return time.perf_counter() - t0
    finally:
        writer.close()


async def test_passes_bytes_through_unchanged(echo_server: EchoServer) -> None:
    proxy = FaultProxy(echo_server.port)
    await proxy.start()
    try:
        payload = bytes(range(256)) * 4096  # 1 MiB, several reads and writes each way
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(payload)
        await writer.drain()
        got = await asyncio.wait_for(reader.readexactly(len(payload)), 10)
        writer.close()
        assert got == payload
    finally:
        await proxy.stop()


async def test_adds_latency_each_way_without_throttling(echo_server: EchoServer) -> None:
    latency = 0.5
    proxy = FaultProxy(echo_server.port)
    await proxy.start()
    try:
        await _round_trip(proxy.port)
        proxy.latency_s = latency
        # A round trip crosses the proxy twice, each way delayed by at least the latency.
        assert await _round_trip(proxy.port) >= 2 * latency * 0.98

        # Ten chunks sent back to back are each delayed, not queued behind each other's delay: a
        # throttling proxy would need ten latencies (5 s) before the last byte came back.
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        t0 = time.perf_counter()
        for _ in range(10):
            writer.write(b"x" * 1000)
            await writer.drain()
            await asyncio.sleep(0.01)
        await asyncio.wait_for(reader.readexactly(10_000), 30)
        writer.close()
        assert time.perf_counter() - t0 < 10 * latency

        # Back to zero: data flows again (the sleep-until-due path with nothing to wait for).
        proxy.latency_s = 0.0
        await _round_trip(proxy.port)
    finally:
        await proxy.stop()


async def test_cut_drops_live_connections(echo_server: EchoServer, caplog: pytest.LogCaptureFixture) -> None:
    proxy = FaultProxy(echo_server.port)
    await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"hello")
        assert await asyncio.wait_for(reader.readexactly(5), 5) == b"hello"
        assert await proxy.cut() == 1
        # The client sees the link die (reset or EOF), not a hang (which would end in TimeoutError).
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(reader.readexactly(1), 30)
        writer.close()
        # New connections still work after a cut, and the cut handlers ended cleanly (no asyncio
        # "exception in callback" noise for cancelled handlers).
        await _round_trip(proxy.port)
        assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
    finally:
        await proxy.stop()


async def test_down_refuses_then_up_serves_again(echo_server: EchoServer) -> None:
    proxy = FaultProxy(echo_server.port)
    port = await proxy.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await proxy.down() == 1
        assert not proxy.is_up
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(reader.readexactly(1), 30)
        writer.close()
        await proxy.up()
        assert proxy.port == port  # same address: the registry entry stays valid
        await _round_trip(port)
    finally:
        await proxy.stop()
