"""Sessions that outlive an edge, for real: two ``voicemesh edge serve`` processes sharing a real
redis-server, a real region (real vLLM, Whisper, Piper), and the stock ``openai`` SDK as the client,
behind a loopback load balancer (``voicemesh.drills.faults.Balancer``) so its own reconnect lands on
the other edge. The SDK resumes through its ``on_reconnecting`` hook (``extra_query.session_id``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from openai.types.websocket_reconnection import ReconnectingEvent, ReconnectingOverrides

from tests.edge.conftest import session_id
from tests.fixtures.common import free_port
from tests.fixtures.edge import serve_edge
from tests.fixtures.region import RunningRegion
from voicemesh.drills.faults import Balancer
from voicemesh.processes import kill_tree, stop
from voicemesh.realtime import client

KEY = "vm-resume-live-key"
GREETING = "My name is Ada. Say hello to me in one sentence."
TIMEOUT_S = 240.0  # a turn on a 2-core machine shared with other test runs


@dataclass
class EdgeProcess:
    port: int
    process: Any
    log: Path

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1"


def start_edge(tmp: Path, region: RunningRegion, region_keys: Path, store_url: str, name: str) -> EdgeProcess:
    port = free_port()
    log = tmp / f"{name}.log"
    env = {"VOICEMESH_API_KEY": KEY, "VOICEMESH_DRAIN_S": "60"}
    proc = serve_edge(port, [region], region_keys, store_url, log, env=env, what=name)
    return EdgeProcess(port, proc, log)


@pytest.fixture
def two_edges(
    tmp_path: Path, region: RunningRegion, region_keys: Path, redis_url: str
) -> Iterator[tuple[EdgeProcess, EdgeProcess]]:
    a = start_edge(tmp_path, region, region_keys, redis_url, "edge-a")
    try:
        b = start_edge(tmp_path, region, region_keys, redis_url, "edge-b")
    except BaseException:
        stop(a.process)
        raise
    try:
        yield a, b
    finally:
        for edge in (a, b):
            stop(edge.process, grace_s=5)


@pytest_asyncio.fixture
async def balancer(two_edges: tuple[EdgeProcess, EdgeProcess]) -> AsyncIterator[Balancer]:
    lb = Balancer([e.port for e in two_edges])  # the first connection goes to edge A
    await lb.start()
    try:
        yield lb
    finally:
        await lb.stop()


def user_text(text: str) -> Any:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def transcript(item: Any) -> str:
    part = item.content[0]
    return str(getattr(part, "transcript", None) or getattr(part, "text", None) or "")


async def next_of(events: Any, type_: str, seen: list[Any]) -> Any:
    async with asyncio.timeout(TIMEOUT_S):
        async for event in events:
            seen.append(event)
            if event.type == type_:
                return event
    raise AssertionError(f"the connection ended before {type_}")


async def test_resume_on_a_second_edge_process_keeps_the_conversation(
    two_edges: tuple[EdgeProcess, EdgeProcess],
) -> None:
    a, b = two_edges
    seen: list[Any] = []
    async with client(a.url, KEY).realtime.connect(model="m") as conn:
        sid = session_id(await conn.recv())
        await conn.conversation.item.create(
            item=user_text("My name is Ada. Say hello to me in one sentence.")
        )
        await conn.response.create(response={"max_output_tokens": 40})
        first = await next_of(conn, "response.done", seen)
        assert first.response.status == "completed"
        first_answer = transcript(first.response.output[0])
        assert first_answer
    seen = []
    async with client(b.url, KEY).realtime.connect(model="m", extra_query={"session_id": sid}) as conn:
        assert session_id(await conn.recv()) == sid
        await next_of(conn, "voicemesh.session.resumed", seen)
        items = [e.item for e in seen if e.type == "conversation.item.done"]
        assert [(i.role, transcript(i)) for i in items] == [
            ("user", GREETING),
            ("assistant", first_answer),
        ]
        await conn.conversation.item.create(item=user_text("What is my name?"))
        await conn.response.create(response={"max_output_tokens": 30})
        second = await next_of(conn, "response.done", seen)
        assert second.response.status == "completed" and transcript(second.response.output[0])
        # The item chain on edge B goes on from edge A's items.
        added = [e for e in seen if e.type == "conversation.item.added" and e.item.role == "user"][-1]
        assert added.previous_item_id == items[-1].id


async def test_sigkill_mid_answer_resumes_on_the_other_edge_and_finishes_from_what_was_heard(
    two_edges: tuple[EdgeProcess, EdgeProcess], balancer: Balancer
) -> None:
    a, _ = two_edges
    sid = ""

    def on_reconnecting(event: ReconnectingEvent) -> ReconnectingOverrides:
        return {"extra_query": {**event.extra_query, "session_id": sid}}

    lb_url = f"ws://127.0.0.1:{balancer.port}/v1"
    seen: list[Any] = []
    rt = client(lb_url, KEY).realtime
    async with rt.connect(model="m", on_reconnecting=on_reconnecting, max_retries=6) as conn:
        sid = session_id(await conn.recv())
        await conn.conversation.item.create(
            item=user_text("Tell me a long story about a brave knight, a dragon and a castle.")
        )
        await conn.response.create(response={"max_output_tokens": 150})
        await next_of(conn, "response.output_audio.delta", seen)
        await next_of(conn, "response.output_audio_transcript.delta", seen)
        await asyncio.sleep(3.0)  # a few clauses played, and a throttled snapshot written
        kill_tree(a.process.pid)  # the edge dies mid-answer: no drain, no goodbye
        a.process.wait(timeout=10)
        created = await next_of(conn, "session.created", seen)
        assert session_id(created) == sid
        # What the dead edge sent before it died: every event before the new session.created (the
        # test read none while it slept; they waited in the client's buffer).
        cut = seen.index(created)
        before = "".join(e.delta for e in seen[:cut] if e.type == "response.output_audio_transcript.delta")
        resumed = await next_of(conn, "voicemesh.session.resumed", seen)
        assert json.loads(resumed.model_dump_json())["continuing"] is True
        items = [e.item for e in seen[cut:] if e.type == "conversation.item.done"]
        answer = items[-1]
        assert (answer.role, answer.status) == ("assistant", "incomplete")
        heard = transcript(answer)
        assert heard and "".join(before.split()).startswith("".join(heard.split()))
        after = len(seen)
        done = await next_of(conn, "response.done", seen)
        assert done.response.status == "completed"
        rest = "".join(e.delta for e in seen[after:] if e.type == "response.output_audio_transcript.delta")
        assert rest.strip(), "the answer was not finished"
        assert not rest.strip().startswith(heard.strip()[:30]), "the heard part was repeated"


async def test_sigterm_drains_an_edge_the_answer_finishes_and_the_client_resumes_elsewhere(
    two_edges: tuple[EdgeProcess, EdgeProcess], balancer: Balancer
) -> None:
    a, _ = two_edges
    sid = ""

    def on_reconnecting(event: ReconnectingEvent) -> ReconnectingOverrides:
        return {"extra_query": {**event.extra_query, "session_id": sid}}

    lb_url = f"ws://127.0.0.1:{balancer.port}/v1"
    seen: list[Any] = []
    rt = client(lb_url, KEY).realtime
    async with rt.connect(model="m", on_reconnecting=on_reconnecting, max_retries=6) as conn:
        sid = session_id(await conn.recv())
        await conn.conversation.item.create(item=user_text("Name three colours."))
        await conn.response.create(response={"max_output_tokens": 40})
        await next_of(conn, "response.output_audio.delta", seen)
        os.kill(a.process.pid, signal.SIGTERM)
        done = await next_of(conn, "response.done", seen)
        assert done.response.status == "completed"  # let finish, not cut
        told = await next_of(conn, "voicemesh.session.resume_required", seen)
        assert json.loads(told.model_dump_json())["session_id"] == sid
        created = await next_of(conn, "session.created", seen)  # the SDK reconnected (1012)
        assert session_id(created) == sid
        await next_of(conn, "voicemesh.session.resumed", seen)
        await conn.conversation.item.create(item=user_text("And one more?"))
        await conn.response.create(response={"max_output_tokens": 20})
        again = await next_of(conn, "response.done", seen)
        assert again.response.status == "completed"
    assert a.process.wait(timeout=30) == 0  # drained and exited by itself
