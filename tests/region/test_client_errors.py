"""Whose fault a refused turn is, as the region reports it: every error about the request decodes (by
its code, ``wire.errors.decode_error``) to a ``ProtocolError``, and an LLM server that refuses a
request with a 4xx makes the turn a client error, not a region failure.

A tiny real HTTP server on loopback stands in for vLLM (answering its error shapes): the model is
not what is under test, the real ``VllmClient`` and ``TurnSession`` around it are. STT and TTS are
the ``region.testing`` stand-ins.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from region.llm import VllmClient
from region.protocols import LlmError
from region.settings import LlmSettings
from region.testing import open_session, standin_node
from tests.region.helpers import BAD_INPUT, start
from wire.errors import LlmRefused, ProtocolError, decode_error
from wire.turn import TurnDone, TurnError, TurnStart

CONTEXT_ERROR = (
    "This model's maximum context length is 2048 tokens. However, you requested 90000 tokens"
    " (89000 in the messages, 1000 in the completion). Please reduce the length of the messages."
)


@asynccontextmanager
async def fake_vllm(status: int, body: dict[str, object]) -> AsyncIterator[str]:
    """An HTTP server answering every request with ``status`` and ``body`` (JSON); yields its /v1 URL."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next((int(ln.split(b":")[1]) for ln in lines if ln.startswith(b"content-length")), 0)
        await reader.readexactly(length)
        payload = json.dumps(body).encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + payload
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()
        await server.wait_closed()


def client(url: str) -> VllmClient:
    return VllmClient(LlmSettings(model="m", served_name="m"), url, system_prompt="Be brief.")


async def first_delta(llm: VllmClient) -> str:
    async for delta in llm.stream(TurnStart(turn_id="t", text="hi", max_output_tokens=10**9), "hi"):
        return delta
    return ""


@pytest.mark.parametrize("status", [400, 413, 422])
async def test_a_request_vllm_refuses_is_the_clients_error_with_its_message(status: int) -> None:
    async with fake_vllm(status, {"object": "error", "message": CONTEXT_ERROR, "code": status}) as url:
        llm = client(url)
        with pytest.raises(LlmRefused) as refused:
            await first_delta(llm)
        await llm.aclose()
    assert isinstance(refused.value, ProtocolError) and CONTEXT_ERROR[:200] in refused.value.message


@pytest.mark.parametrize("status", [500, 503, 404])
async def test_other_vllm_failures_stay_the_regions(status: int) -> None:
    async with fake_vllm(status, {"object": "error", "message": "engine dead"}) as url:
        llm = client(url)
        with pytest.raises(LlmError) as failed:
            await first_delta(llm)
        await llm.aclose()
    assert not isinstance(failed.value, ProtocolError) and "engine dead" in failed.value.message


async def test_a_refused_prompt_ends_the_turn_with_a_client_error_and_the_connection_stays_usable() -> None:
    async with fake_vllm(400, {"error": {"message": CONTEXT_ERROR, "type": "BadRequestError"}}) as url:
        llm = client(url)
        node = standin_node(llm=llm)
        async with open_session(node) as channel:
            channel.push(start("long", text="Hi."))
            (error,) = [m for m in await channel.wait_for(TurnError) if isinstance(m, TurnError)]
            channel.push(start("next", text="Hi again."))
            sent = await channel.wait_for(TurnError, count=2)
        await llm.aclose()
    # The turn ends with its error (no turn.done), decoded by the router as the client's.
    assert error.turn_id == "long" and error.code == "llm_refused" and "maximum context" in error.message
    assert isinstance(decode_error(error.code, error.message), LlmRefused)
    assert not [m for m in sent if isinstance(m, TurnDone)]


@pytest.mark.parametrize(("name", "frames", "code"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
async def test_every_bad_input_code_decodes_as_the_clients_error(
    name: str, frames: list[str | bytes], code: str
) -> None:
    """What the region answers to bad input is, by its class, the client's: the router never fails it
    over (``text_too_long`` once was not, and opened every region's breaker)."""
    node = standin_node()
    async with open_session(node) as channel:
        for frame in frames:
            channel.push(frame)
        (error,) = [m for m in await channel.wait_for(TurnError) if isinstance(m, TurnError)]
    assert error.code == code
    assert isinstance(decode_error(error.code, error.message, region="r"), ProtocolError), name
