"""Resume and drain, over real sockets: two real edges (uvicorn + Litestar on loopback) sharing one
store, the stock ``openai`` SDK as the client.

The router and its regions are ``ScriptedRouter`` stand-ins here: what is under test is the edge's
snapshot, claim, takeover and drain, not the model (``tests/edge/test_resume_live.py`` runs the
real ones across two edge processes and Redis).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
import websockets

from edge.app.server import EdgeTask, drain
from edge.app.services import EdgeServices
from edge.realtime.session_snapshot import SessionSnapshots
from edge.shared.settings import EdgeSettings
from edge.stores.memory import LocalStore
from edge.testing import Hold, ScriptedRouter, clause, memory_services, silence, spoken_reply, tone
from router.api import Routed
from tests.edge.conftest import session_id
from tests.fixtures.common import free_port
from voicemesh.realtime import client
from wire.turn import TextDelta, Transcript, TurnDone

KEY, OTHER_KEY = "key-resume-1", "key-resume-2"


@dataclass
class Edge:
    url: str
    services: EdgeServices
    router: ScriptedRouter
    task: EdgeTask


EdgePair = Callable[..., Any]


@pytest_asyncio.fixture
async def edges() -> AsyncIterator[Callable[[ScriptedRouter, ScriptedRouter], Any]]:
    """``await edges(router_a, router_b)``: two edges whose sessions live in one shared store."""
    started: list[EdgeTask] = []
    store = LocalStore()

    async def start(*routers: ScriptedRouter) -> list[Edge]:
        out = []
        for router in routers:
            settings = EdgeSettings(port=free_port(), api_keys=(KEY, OTHER_KEY))
            services = memory_services(router, settings=settings)
            services.store = store
            services.sessions = SessionSnapshots(store, ttl_s=60)
            task = await EdgeTask.start(settings, router, services=services)
            started.append(task)
            out.append(Edge(f"ws://127.0.0.1:{settings.port}/v1", services, router, task))
        return out

    yield start
    for task in started:
        await asyncio.wait_for(task.aclose(), 30)


def connect(edge: Edge, key: str = KEY, **query: str) -> Any:
    return client(edge.url, key).realtime.connect(model="m", extra_query=query)


async def until(conn: Any, type_: str, timeout_s: float = 20.0) -> tuple[Any, list[Any]]:
    """Events up to and including the first of ``type_``."""
    seen: list[Any] = []
    async with asyncio.timeout(timeout_s):
        while True:
            event = await conn.recv()
            seen.append(event)
            if event.type == type_:
                return event, seen


async def ask(conn: Any, text: str) -> None:
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    await conn.conversation.item.create(item=item)
    await conn.response.create()


async def test_a_session_resumes_on_another_edge_with_its_conversation(edges: Any) -> None:
    a, b = await edges(
        ScriptedRouter(spoken_reply("Paris is the capital.")), ScriptedRouter(spoken_reply("Yes."))
    )
    async with connect(a) as conn:
        sid = session_id(await conn.recv())
        await ask(conn, "What is the capital of France?")
        await until(conn, "response.done")
    async with connect(b, session_id=sid) as conn:
        created = await conn.recv()
        assert session_id(created) == sid
        resumed, seen = await until(conn, "voicemesh.session.resumed")
        items = [e.item for e in seen if e.type == "conversation.item.done"]
        assert [
            (i.role, i.content[0].model_dump().get("text") or i.content[0].transcript) for i in items
        ] == [
            ("user", "What is the capital of France?"),
            ("assistant", "Paris is the capital."),
        ]
        assert json.loads(resumed.model_dump_json())["continuing"] is False
        await ask(conn, "Are you sure?")
        await until(conn, "response.done")
    # The second edge's turn carried the first edge's turn in its history.
    (turn,) = b.router.turns
    assert [(m.role, m.content) for m in turn.start.history] == [
        ("user", "What is the capital of France?"),
        ("assistant", "Paris is the capital."),
    ]
    assert turn.start.text == "Are you sure?"


async def test_another_key_or_an_unknown_id_gets_the_same_refusal(edges: Any) -> None:
    (a,) = await edges(ScriptedRouter(spoken_reply("Hi.")))
    async with connect(a) as conn:
        sid = session_id(await conn.recv())
        refusals = []
        for key, wanted in ((OTHER_KEY, sid), (KEY, "sess_unknown"), (OTHER_KEY, "sess_unknown")):
            url = f"{a.url}/realtime?model=m&session_id={wanted}"
            with pytest.raises(websockets.InvalidStatus) as info:
                async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}):
                    pass
            response = info.value.response
            refusals.append((response.status_code, json.loads(response.body or b"{}")))
        assert refusals[0][0] == 404 and refusals[0][1]["error"]["code"] == "session_not_found"
        assert refusals[0] == refusals[1] == refusals[2]  # no oracle on which ids exist
        # The owner's live session was not disturbed by the attempts.
        await ask(conn, "Still there?")
        done, _ = await until(conn, "response.done")
        assert done.response.status == "completed"


async def test_a_resume_takes_the_session_over_from_a_live_connection(edges: Any) -> None:
    a, b = await edges(ScriptedRouter(spoken_reply("Hi.")), ScriptedRouter(spoken_reply("Hi.")))
    async with connect(a) as old:
        sid = session_id(await old.recv())
        async with connect(b, session_id=sid) as new:
            assert session_id(await new.recv()) == sid
            error, _ = await until(old, "error")
            assert error.error.code == "session_taken_over"
            with pytest.raises(websockets.ConnectionClosed):  # by the edge (1000: not to be retried)
                async with asyncio.timeout(10):
                    await old.recv()
            await ask(new, "Hello?")
            done, _ = await until(new, "response.done")
            assert done.response.status == "completed"
    assert a.services.sessions.live == {}


def held_answer(hold: Hold) -> list[Any]:
    """A spoken answer whose first clause is played, then the region waits (the edge goes away)."""
    return [
        Routed(region="scripted"),
        TextDelta(turn_id="turn", delta="The first part. "),
        clause("The first part."),
        hold,
        TextDelta(turn_id="turn", delta="The second part."),
        clause("The second part.", index=1),
        TurnDone(
            turn_id="turn", region="scripted", status="completed", text="The first part. The second part."
        ),
    ]


async def test_an_answer_cut_short_is_finished_from_what_was_heard(edges: Any) -> None:
    hold = Hold()
    a, b = await edges(ScriptedRouter(held_answer(hold)), ScriptedRouter(spoken_reply("The second part.")))
    async with connect(a) as conn:
        sid = session_id(await conn.recv())
        await ask(conn, "Tell me two things.")
        await until(conn, "response.output_audio_transcript.delta")
        await asyncio.wait_for(hold.reached.wait(), 10)
        await asyncio.sleep(0.3)  # the first clause's audio is out (paced playback)
    async with connect(b, session_id=sid) as conn:
        await conn.recv()
        resumed, seen = await until(conn, "voicemesh.session.resumed")
        assert json.loads(resumed.model_dump_json())["continuing"] is True
        cut = [e.item for e in seen if e.type == "conversation.item.done"][-1]
        assert (cut.role, cut.status, cut.content[0].transcript) == (
            "assistant",
            "incomplete",
            "The first part.",
        )
        done, rest = await until(conn, "response.done")
        assert done.response.status == "completed"
        said = "".join(e.delta for e in rest if e.type == "response.output_audio_transcript.delta")
        assert said.strip() == "The second part."
    (turn,) = b.router.turns
    assert turn.start.heard_text == "The first part."  # the router's continuation: not repeated
    assert turn.start.text == "Tell me two things."
    hold.release()


async def test_drain_finishes_the_answer_then_tells_the_client_to_resume(edges: Any) -> None:
    hold = Hold()
    (a,) = await edges(ScriptedRouter(held_answer(hold)))
    async with connect(a) as conn:
        sid = session_id(await conn.recv())
        await ask(conn, "Tell me two things.")
        await asyncio.wait_for(hold.reached.wait(), 10)
        draining = asyncio.create_task(drain(a.services, lambda _: None))
        await asyncio.sleep(0.2)
        # New sessions are refused while the running one finishes.
        url = a.url.replace("ws://", "http://")
        async with httpx.AsyncClient() as http:
            health = await http.get(url.removesuffix("/v1") + "/health")
        assert health.status_code == 503 and health.headers["retry-after"]
        with pytest.raises(websockets.InvalidStatus) as info:
            async with websockets.connect(
                f"{a.url}/realtime", additional_headers={"Authorization": f"Bearer {KEY}"}
            ):
                pass
        assert info.value.response.status_code == 503
        assert info.value.response.headers["Retry-After"]
        hold.release()
        done, _ = await until(conn, "response.done")
        assert done.response.status == "completed"  # the answer was let finish
        told, _ = await until(conn, "voicemesh.session.resume_required")
        body = json.loads(told.model_dump_json())
        assert body["session_id"] == sid and body["resume_url"].endswith(f"session_id={sid}")
        with pytest.raises(websockets.ConnectionClosed):
            async with asyncio.timeout(10):
                await conn.recv()
        await asyncio.wait_for(draining, 30)
    snapshot = await a.services.sessions.load_snapshot(sid)
    assert snapshot is not None and snapshot.in_flight is None
    assert [i["role"] for i in snapshot.items] == ["user", "assistant"]


async def test_snapshots_expire_and_another_version_is_not_resumable(edges: Any) -> None:
    (a,) = await edges(ScriptedRouter(spoken_reply("Hi.")))
    async with connect(a) as conn:
        sid = session_id(await conn.recv())
    store, snapshots = a.services.store, a.services.sessions
    ttl = await store.expires_in(f"session:{sid}")
    assert ttl is not None and 0 < ttl <= snapshots.ttl_s  # bounded: an abandoned session goes away
    snapshot = await snapshots.load_snapshot(sid)
    assert snapshot is not None
    snapshot.v = 99  # written by another (future) layout
    await snapshots.write(snapshot)
    auth = {"Authorization": f"Bearer {KEY}"}
    with pytest.raises(websockets.InvalidStatus) as info:
        async with websockets.connect(f"{a.url}/realtime?session_id={sid}", additional_headers=auth):
            pass
    assert info.value.response.status_code == 404


async def test_a_snapshot_the_store_lost_is_written_again_and_the_session_still_resumes(edges: Any) -> None:
    """A Redis restarted empty loses every snapshot: a session waiting for its next turn writes
    nothing new of its own, yet must be resumable when its edge dies next (the chaos drill's lost
    caller). The keeper notices within its interval and writes it again."""
    a, b = await edges(ScriptedRouter(spoken_reply("Paris.")), ScriptedRouter(spoken_reply("Yes.")))
    async with connect(a) as conn:
        sid = session_id(await conn.recv())
        await ask(conn, "What is the capital of France?")
        await until(conn, "response.done")
        snapshots = a.services.sessions
        await snapshots.delete(sid)  # what a Redis restarted empty does to it
        assert not (await snapshots.stored(sid)).found
        async with asyncio.timeout(20):
            while not (await snapshots.stored(sid)).found:  # noqa: ASYNC110 - a store has no event to wait on
                await asyncio.sleep(0.05)
        snapshot = await snapshots.load_snapshot(sid)
        assert snapshot is not None and [i["role"] for i in snapshot.items] == ["user", "assistant"]
    async with connect(b, session_id=sid) as resumed:
        assert session_id(await resumed.recv()) == sid
        event, _ = await until(resumed, "voicemesh.session.resumed")
        assert json.loads(event.model_dump_json())["items"] == 2


async def test_a_spoken_turn_whose_edge_went_before_its_words_came_back_is_heard_again(edges: Any) -> None:
    """The edge goes away after the user's turn was committed and its answer started, but before
    the region's transcript came: the snapshot written at the turn's end keeps its audio, and the
    resumed session sends it again (the chaos drill's lost turn). Nothing was heard, so the answer
    is a whole one, and the item gets its transcript."""
    region_holds = Hold()
    answer = [Routed(region="scripted"), Transcript(turn_id="turn", text="what time is it")]
    a, b = await edges(
        ScriptedRouter([Routed(region="scripted"), region_holds]),
        ScriptedRouter([*answer, *spoken_reply("Noon.")[1:]]),
    )
    async with connect(a) as conn:
        sid = session_id(await conn.recv())
        await conn.input_audio_buffer.append(audio=base64.b64encode(tone(0.4) + silence(0.8)).decode())
        committed, _ = await until(conn, "input_audio_buffer.committed")
        await asyncio.wait_for(region_holds.reached.wait(), 10)
        snapshot = await a.services.sessions.load_snapshot(sid)  # as the turn's end wrote it
        assert snapshot is not None and snapshot.in_flight is not None
        assert snapshot.in_flight.user_item_id == committed.item_id
        assert snapshot.in_flight.audio == a.router.turns[0].audio and snapshot.in_flight.audio
    async with connect(b, session_id=sid) as conn:
        await conn.recv()
        resumed, _ = await until(conn, "voicemesh.session.resumed")
        assert json.loads(resumed.model_dump_json())["continuing"] is True
        heard, _ = await until(conn, "conversation.item.input_audio_transcription.completed")
        assert (heard.item_id, heard.transcript) == (committed.item_id, "what time is it")
        done, rest = await until(conn, "response.done")
        assert done.response.status == "completed"
        said = "".join(e.delta for e in rest if e.type == "response.output_audio_transcript.delta")
        assert said.strip() == "Noon."
    (turn,) = b.router.turns
    assert turn.audio == a.router.turns[0].audio and turn.start.heard_text == ""
    region_holds.release()
