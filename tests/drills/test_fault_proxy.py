"""The fault proxy on real loopback sockets: pass-through, measured latency, cuts, downtime."""

from __future__ import annotations

import asyncio
import time

import pytest

from infra.drills.faults import FaultProxy
from tests.fixtures.drills import EchoServer


async def _round_trip(port: int, payload: bytes = b"ping") -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        t0 = time.perf_counter()
        writer.write(payload)
        await writer.drain()
        got = await asyncio.wait_for(reader.readexactly(len(payload)), 5)
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
    proxy = FaultProxy(echo_server.port)
    await proxy.start()
    try:
        base = min([await _round_trip(proxy.port) for _ in range(3)])
        proxy.latency_s = 0.15
        slow = min([await _round_trip(proxy.port) for _ in range(3)])
        # A round trip crosses the proxy twice: +0.30 s, give or take scheduling.
        assert 0.28 <= slow - base <= 0.6, (base, slow)

        # Ten chunks sent back to back are each delayed, not queued behind each other's delay.
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        t0 = time.perf_counter()
        for _ in range(10):
            writer.write(b"x" * 1000)
            await writer.drain()
            await asyncio.sleep(0.01)
        await asyncio.wait_for(reader.readexactly(10_000), 5)
        writer.close()
        assert time.perf_counter() - t0 < 0.9  # 10 x 0.3 s would be 3 s if it throttled

        proxy.latency_s = 0.0
        assert await _round_trip(proxy.port) < base + 0.1
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
        # The client sees the link die at once (reset or EOF), not a hang.
        t0 = time.perf_counter()
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(reader.readexactly(1), 2)
        assert time.perf_counter() - t0 < 1.0
        writer.close()
        # New connections still work after a cut, and the cut handlers ended cleanly (no asyncio
        # "exception in callback" noise for cancelled handlers).
        assert await _round_trip(proxy.port) < 1.0
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
            await asyncio.wait_for(reader.readexactly(1), 2)
        writer.close()
        await proxy.up()
        assert proxy.port == port  # same address: the registry entry stays valid
        assert await _round_trip(port) < 1.0
    finally:
        await proxy.stop()
