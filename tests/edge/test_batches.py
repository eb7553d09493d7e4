"""Speech batches (``POST /v1/speech/batches``) on the edge's side, over a real socket: a real edge
(uvicorn + Litestar on loopback) whose batch worker claims items from a real ``redis-server``, and
a real webhook receiver on loopback (``tests/fixtures/webhooks.py``) whose signatures the stock
openai SDK checks.

The router is an ``edge.testing.ScriptedRouter`` stand-in: the regions are not under test here
(what a region does with a ``batch`` turn is in ``tests/region/test_live_first.py``); the edge's
handling of what they send is: checks, the queue, retries, results, the cache, webhooks. Each test
has its own key prefix in the shared Redis (its own queue), so tests never see each other's work.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx
import jwt
import openai
import pytest
import pytest_asyncio

from edge.app.server import EdgeTask
from edge.app.services import EdgeServices
from edge.shared.egress import parse_networks
from edge.shared.settings import BatchSettings, EdgeSettings
from edge.stores.redis.batches import BatchStore
from edge.tenancy.auth import key_id
from edge.testing import Hold, ScriptedRouter, ScriptStep, clause, memory_services
from router.api import ClientRefused, Degraded, Routed
from tests.fixtures.common import free_port
from tests.fixtures.webhooks import WebhookReceiverFactory
from wire.bounded_redis import BoundedRedis
from wire.turn import TextDelta, TurnDone

KEY, OTHER = "batch-key-a", "batch-key-b"
WAIT_S = 60.0
"""Only stops a broken test from hanging: every wait below ends on a condition."""

FAST = BatchSettings(
    workers=1, max_items=5, lease_s=10.0, poll_s=0.05, retry_s=0.05, max_retry_s=0.2,
    webhook_attempts=3, webhook_timeout_s=5.0, webhook_allow=parse_networks("127.0.0.1/32"),
)  # fmt: skip
"""The receivers are on loopback: the operator's allowlist lets them in (``VOICEMESH_WEBHOOK_ALLOW``)."""


def spoken(*clauses: str, region: str = "r1") -> list[ScriptStep]:
    events: list[ScriptStep] = [Routed(region=region), TextDelta(turn_id="t", delta=" ".join(clauses))]
    events += [clause(c, index=i) for i, c in enumerate(clauses)]
    return [*events, TurnDone(turn_id="t", region=region, status="completed")]


def item(text: str = "Hello there.", **params: Any) -> dict[str, Any]:
    return {"model": "tts-1", "voice": "alloy", "input": text} | params


# -- an edge on the shared Redis ---------------------------------------------------------------------


@dataclass
class Edge:
    http: httpx.AsyncClient
    router: ScriptedRouter
    services: EdgeServices
    task: EdgeTask

    async def submit(self, body: Any, *, key: str = KEY, content_type: str = "", **kw: Any) -> httpx.Response:
        headers = _auth(key) | ({"content-type": content_type} if content_type else {})
        if isinstance(body, str | bytes):
            return await self.http.post("/v1/speech/batches", content=body, headers=headers, **kw)
        return await self.http.post("/v1/speech/batches", json=body, headers=headers, **kw)

    async def made(self, body: Any, **kw: Any) -> dict[str, Any]:
        reply = await self.submit(body, **kw)
        assert reply.status_code == 201, reply.text
        return reply.json()  # type: ignore[no-any-return]

    async def job(self, job_id: str, *, key: str = KEY) -> dict[str, Any]:
        reply = await self.http.get(f"/v1/speech/batches/{job_id}", headers=_auth(key))
        assert reply.status_code == 200, reply.text
        return reply.json()  # type: ignore[no-any-return]

    async def until(
        self, job_id: str, done: Callable[[dict[str, Any]], bool], *, key: str = KEY
    ) -> dict[str, Any]:
        """Polls the job (as a client does) until ``done(view)``."""
        async with asyncio.timeout(WAIT_S):
            while not done(view := await self.job(job_id, key=key)):  # noqa: ASYNC110 - a REST client polls
                await asyncio.sleep(0.05)
        return view

    async def finished(self, job_id: str, *, key: str = KEY) -> dict[str, Any]:
        return await self.until(job_id, lambda v: v["finished_at"] is not None, key=key)

    async def settled(self, job_id: str) -> dict[str, Any]:
        """Finished, and its webhook (if any) delivered or given up."""
        return await self.until(
            job_id,
            lambda v: (
                v["finished_at"] is not None
                and (v["webhook"] is None or v["webhook"]["status"] in ("delivered", "failed"))
            ),
        )


def _auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


EdgeOf = Callable[..., Awaitable[Edge]]


@pytest_asyncio.fixture
async def edge_of(redis_url: str) -> AsyncIterator[EdgeOf]:
    running: list[tuple[EdgeTask, httpx.AsyncClient]] = []
    prefix = f"test-batches:{uuid.uuid4().hex[:8]}:"

    async def start(
        *scripts: list[ScriptStep],
        batches: BatchSettings = FAST,
        shared: bool = True,
        jwt_secret: str | None = None,
    ) -> Edge:
        settings = EdgeSettings(
            port=free_port(), api_keys=(KEY, OTHER), batches=batches, jwt_secret=jwt_secret
        )
        router = ScriptedRouter(*(scripts or (spoken("Hello there."),)))
        services = memory_services(router, settings=settings)
        if shared:  # the batch store alone is in Redis: the speech cache and audit stay per test
            services.redis = BoundedRedis(redis_url)  # closed with the services
            services.batches = BatchStore(services.redis, ttl_s=600, prefix=prefix)
        task = await EdgeTask.start(settings, router, services=services)
        http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{settings.port}", timeout=30.0)
        running.append((task, http))
        return Edge(http, router, services, task)

    yield start
    for task, http in running:
        await http.aclose()
        await task.aclose()


def verifier() -> openai.AsyncOpenAI:
    """The stock SDK, used only to check signatures (it never connects)."""
    return openai.AsyncOpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1")


# -- submitting and reading results ------------------------------------------------------------------


async def test_a_json_batch_completes_and_each_item_downloads(edge_of: EdgeOf) -> None:
    edge = await edge_of(spoken("First of all.", "Then a second."))
    body = {
        "items": [
            item("First of all. Then a second.", response_format="wav"),
            item("Hi.", response_format="mp3"),
        ],
        "metadata": {"book": "chapter-1"},
    }
    made = await edge.made(body)
    assert made["id"].startswith("batch_") and made["object"] == "speech.batch"
    assert made["status"] in ("queued", "in_progress") and made["counts"]["total"] == 2
    assert [i["index"] for i in made["items"]] == [0, 1] and made["metadata"] == {"book": "chapter-1"}
    assert made["webhook"] is None
    view = await edge.finished(made["id"])
    assert view["status"] == "completed" and view["queue_position"] is None
    assert view["counts"] == {"total": 2, "completed": 2, "failed": 0, "cancelled": 0,
                                   "in_progress": 0, "queued": 0}  # fmt: skip
    for got, (media, magic) in zip(view["items"], [("audio/wav", b"RIFF"), ("audio/mpeg", b"")], strict=True):
        assert got["status"] == "completed" and got["regions"] == ["r1"] and got["cache"] == "miss"
        reply = await edge.http.get(got["url"], headers=_auth(KEY))
        assert reply.status_code == 200 and reply.headers["content-type"].startswith(media)
        assert len(reply.content) == got["audio_bytes"] > 1000 and reply.content.startswith(magic)
    # Each item was a speak-only turn of batch priority, in order.
    starts = [t.start for t in edge.router.turns]
    assert [(s.speak_text, s.priority, s.voice) for s in starts] == [
        ("First of all. Then a second.", "batch", "jf_alpha"),
        ("Hi.", "batch", "jf_alpha"),
    ]
    listed = (await edge.http.get("/v1/speech/batches", headers=_auth(KEY))).json()
    assert [j["id"] for j in listed["data"]] == [made["id"]] and "items" not in listed["data"][0]


async def test_a_jsonl_batch_takes_one_request_a_line(
    edge_of: EdgeOf, webhook_receiver: WebhookReceiverFactory
) -> None:
    edge, hook = await edge_of(), await webhook_receiver()
    lines = "\n".join(json.dumps(item(t, response_format="pcm")) for t in ("One.", "Two.", "Three."))
    made = await edge.made(lines + "\n\n", params={"webhook_url": hook.url}, content_type="application/jsonl")
    assert made["counts"]["total"] == 3 and made["webhook"]["url"] == hook.url
    view = await edge.settled(made["id"])
    assert view["counts"]["completed"] == 3 and view["webhook"]["status"] == "delivered"
    assert [t.start.speak_text for t in edge.router.turns] == ["One.", "Two.", "Three."]
    content = await edge.http.get(view["items"][2]["url"], headers=_auth(KEY))
    assert content.headers["content-type"] == "audio/pcm" and len(content.content) == 2 * 2400


def _jsonl(*lines: str) -> tuple[str, str]:
    return "\n".join(lines), "application/x-ndjson"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"items": []}, "items"),
        ({"items": [item()] * 6}, "items"),  # max_items is 5
        ({"items": [item(), item(), item(voice="nobody")]}, "items[2].voice"),
        ({"items": [item(response_format="ogg")]}, "items[0].response_format"),
        ({"items": [item(input=" ")]}, "items[0].input"),
        ({"items": [item(speed="fast")]}, "items[0].speed"),
        ({"items": [{"model": "tts-1", "voice": "alloy"}]}, "items[0]"),  # no input
        ({"items": [item()], "webhook": {"url": "ftp://example.com/x"}}, "webhook.url"),
        ({"items": [item()], "webhook": {"url": "http://127.0.0.1/x", "secret": "short"}}, "webhook.secret"),
        (
            {"items": [item()], "webhook": {"url": "http://127.0.0.1/x", "secret": "whsec_" + "!" * 30}},
            "webhook.secret",
        ),
        ({"items": [item()], "priority": "high"}, "priority"),
        ({"items": [item()], "metadata": {f"k{n}": "v" for n in range(17)}}, "metadata"),
        ("not json", "body"),
        (_jsonl(json.dumps(item()), "{not json"), "items[1]"),
        (_jsonl(json.dumps(item()), json.dumps(item(voice="nobody"))), "items[1].voice"),
        (_jsonl(""), "items"),
    ],
)
async def test_bad_batches_get_a_400_naming_the_field(edge_of: EdgeOf, body: Any, param: str) -> None:
    edge = await edge_of()
    if isinstance(body, tuple):
        reply = await edge.submit(body[0], content_type=body[1])
    elif isinstance(body, str):
        reply = await edge.submit(body, content_type="application/json")
    else:
        reply = await edge.submit(body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and error["message"], error
    listed = (await edge.http.get("/v1/speech/batches", headers=_auth(KEY))).json()
    assert listed["data"] == [] and edge.router.turns == []  # nothing made, nothing read


async def test_a_job_is_its_keys_and_unknown_things_are_404(edge_of: EdgeOf) -> None:
    edge = await edge_of()
    made = await edge.made({"items": [item()]})
    await edge.finished(made["id"])
    for path in (f"/v1/speech/batches/{made['id']}", f"/v1/speech/batches/{made['id']}/items/0/content"):
        stranger = await edge.http.get(path, headers=_auth(OTHER))
        assert stranger.status_code == 404 and stranger.json()["error"]["code"] == "batch_not_found"
    cancel = await edge.http.post(f"/v1/speech/batches/{made['id']}/cancel", headers=_auth(OTHER))
    assert cancel.status_code == 404
    assert (await edge.http.get("/v1/speech/batches", headers=_auth(OTHER))).json()["data"] == []
    for path in ("/v1/speech/batches/batch_nope", f"/v1/speech/batches/{made['id']}/items/1/content"):
        missing = await edge.http.get(path, headers=_auth(KEY))
        assert missing.status_code == 404 and missing.json()["error"]["message"], path
    unauthenticated = await edge.http.get(f"/v1/speech/batches/{made['id']}")
    assert unauthenticated.status_code == 401


async def test_without_a_shared_store_batches_are_a_503_saying_why(edge_of: EdgeOf) -> None:
    edge = await edge_of(shared=False)
    for reply in (
        await edge.submit({"items": [item()]}),
        await edge.http.get("/v1/speech/batches", headers=_auth(KEY)),
    ):
        assert reply.status_code == 503
        error = reply.json()["error"]
        assert error["code"] == "batch_store_unavailable" and "--store-url" in error["message"]


# -- webhooks ----------------------------------------------------------------------------------------


async def test_the_webhook_arrives_once_signed_as_openai_signs(
    edge_of: EdgeOf, webhook_receiver: WebhookReceiverFactory
) -> None:
    edge, hook = await edge_of(), await webhook_receiver()
    made = await edge.made({"items": [item(), item("Bye.")], "webhook": {"url": hook.url}})
    secret = made["webhook"]["secret"]  # the edge made it: shown this once
    assert secret.startswith("whsec_") and made["webhook"]["status"] == "waiting"
    view = await edge.settled(made["id"])
    assert view["webhook"] == {"url": hook.url, "status": "delivered", "attempts": 1, "last_error": None}
    assert "secret" not in (await edge.job(made["id"]))["webhook"]
    (delivery,) = hook.deliveries
    event = delivery.event
    assert event["type"] == "speech.batch.completed" and event["object"] == "event"
    assert event["data"]["id"] == made["id"] and event["data"]["counts"]["completed"] == 2
    assert delivery.headers["webhook-id"] == event["id"]
    sdk = verifier()
    sdk.webhooks.verify_signature(delivery.body, delivery.headers, secret=secret)  # raises if not
    with pytest.raises(openai.InvalidWebhookSignatureError):
        sdk.webhooks.verify_signature(delivery.body.replace(b"completed", b"cancelled"), delivery.headers,
                                      secret=secret)  # fmt: skip
    with pytest.raises(openai.InvalidWebhookSignatureError):
        sdk.webhooks.verify_signature(delivery.body, delivery.headers, secret="whsec_" + secret[-20:])
    # ``unwrap`` verifies, then parses leniently: an event type it does not know comes back as data.
    unwrapped = sdk.webhooks.unwrap(delivery.body, delivery.headers, secret=secret)
    assert unwrapped.id == event["id"] and unwrapped.type == "speech.batch.completed"  # type: ignore[comparison-overlap]
    # Still once, however long the workers keep polling.
    await asyncio.sleep(10 * FAST.poll_s)
    assert len(hook.deliveries) == 1


async def test_a_failing_receiver_gets_the_same_event_until_it_answers(
    edge_of: EdgeOf, webhook_receiver: WebhookReceiverFactory
) -> None:
    edge, hook = await edge_of(), await webhook_receiver([500, 500, 200])
    secret = "a-receivers-own-secret-of-32-chars"
    made = await edge.made({"items": [item()], "webhook": {"url": hook.url, "secret": secret}})
    assert "secret" not in made["webhook"]  # the client's own: never echoed
    view = await edge.settled(made["id"])
    assert view["webhook"]["status"] == "delivered" and view["webhook"]["attempts"] == 3
    deliveries = await hook.wait(3)
    assert len({d.headers["webhook-id"] for d in deliveries}) == 1
    for d in deliveries:
        verifier().webhooks.verify_signature(d.body, d.headers, secret=secret)


async def test_a_receiver_that_never_answers_2xx_is_given_up(
    edge_of: EdgeOf, webhook_receiver: WebhookReceiverFactory
) -> None:
    edge, hook = await edge_of(), await webhook_receiver([500])
    made = await edge.made({"items": [item()], "webhook": {"url": hook.url}})
    view = await edge.settled(made["id"])
    assert view["status"] == "completed"  # the job is done; only its webhook failed
    assert view["webhook"] == {"url": hook.url, "status": "failed", "attempts": FAST.webhook_attempts,
                               "last_error": "HTTP 500"}  # fmt: skip
    await asyncio.sleep(10 * FAST.poll_s)
    assert len(hook.deliveries) == FAST.webhook_attempts


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("127.0.0.1", "a loopback"), ("[::1]", "a loopback"), ("10.1.2.3", "a private"),
        ("172.16.0.9", "a private"), ("192.168.1.1", "a private"), ("[fd00::1]", "a private"),
        ("169.254.169.254", "a link-local"), ("[fe80::1]", "a link-local"), ("224.0.0.251", "a multicast"),
        ("[ff02::1]", "a multicast"), ("0.0.0.0", "an unspecified"), ("100.64.0.1", "a non-public"),
        ("[::ffff:10.0.0.1]", "a private"),
    ],
)  # fmt: skip
async def test_a_webhook_to_a_non_public_address_is_refused_when_given(
    edge_of: EdgeOf, host: str, kind: str
) -> None:
    """Refused at once, with the reason (nothing is sent: the address is only read). Loopback is
    refused here because this edge's allowlist is empty."""
    edge = await edge_of(batches=replace(FAST, webhook_allow=()))
    reply = await edge.http.post(
        "/v1/speech/batches", json={"items": [item()], "webhook": {"url": f"http://{host}:8080/hook"}},
        headers=_auth(KEY),
    )  # fmt: skip
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == "webhook.url" and f"{kind} address" in error["message"], error
    assert edge.router.turns == []  # no job was made


async def test_a_name_that_resolves_to_a_refused_address_is_refused_at_connection(
    edge_of: EdgeOf, webhook_receiver: WebhookReceiverFactory
) -> None:
    """The check that matters is on the address connected to: a name (``localhost``, resolving to
    loopback as a rebinding name would) passes the first look, and its delivery is refused at
    connection, at once, not retried; the receiver hears nothing."""
    edge, hook = await edge_of(batches=replace(FAST, webhook_allow=())), await webhook_receiver()
    named = hook.url.replace("127.0.0.1", "localhost")
    made = await edge.made({"items": [item()], "webhook": {"url": named}})
    view = await edge.settled(made["id"])
    assert view["webhook"]["status"] == "failed" and view["webhook"]["attempts"] == 1, view["webhook"]
    assert "not a public address" in view["webhook"]["last_error"]
    await asyncio.sleep(10 * FAST.poll_s)
    assert hook.deliveries == []


async def test_a_receiver_nobody_listens_on_is_retried_then_given_up(edge_of: EdgeOf) -> None:
    edge = await edge_of()
    made = await edge.made({"items": [item()], "webhook": {"url": f"http://127.0.0.1:{free_port()}/x"}})
    view = await edge.settled(made["id"])
    assert view["webhook"]["status"] == "failed" and view["webhook"]["attempts"] == FAST.webhook_attempts
    assert "ConnectError" in view["webhook"]["last_error"]


# -- regions that cannot, or will not ----------------------------------------------------------------


async def test_an_item_no_region_can_take_waits_in_the_queue_then_completes(edge_of: EdgeOf) -> None:
    nowhere: list[ScriptStep] = [Degraded(reason="all_regions_busy")]
    cut: list[ScriptStep] = [*spoken("First of all.")[:3], Degraded(reason="all_regions_down")]
    ended: list[ScriptStep] = [
        *spoken("First of all.")[:3],
        TurnDone(turn_id="t", region="r1", status="cancelled"),
    ]
    edge = await edge_of(nowhere, cut, ended, spoken("First of all.", "Then a second."))
    made = await edge.made({"items": [item("First of all. Then a second.", response_format="pcm")]})
    waiting = await edge.until(made["id"], lambda v: len(edge.router.turns) >= 2)
    if waiting["finished_at"] is None:
        assert waiting["items"][0]["status"] in ("queued", "running")  # back in the queue, not failed
    view = await edge.finished(made["id"])
    (got,) = view["items"]
    assert got["status"] == "completed" and got["attempts"] == 4  # refused, cut, ended early, whole
    assert len(edge.router.turns) == 4
    content = await edge.http.get(got["url"], headers=_auth(KEY))
    assert len(content.content) == 2 * 4800  # said once, whole: not the cut attempt's clause again
    assert edge.services.fallback.spoken == []  # type: ignore[attr-defined]  # never the edge's voice


async def test_an_item_no_region_takes_before_its_deadline_fails(edge_of: EdgeOf) -> None:
    edge = await edge_of([Degraded(reason="all_regions_busy")], batches=replace(FAST, item_deadline_s=3.0))
    made = await edge.made({"items": [item()]})
    view = await edge.finished(made["id"])
    (got,) = view["items"]
    assert view["status"] == "failed" and got["status"] == "failed"
    assert got["error"]["code"] == "no_region_available" and got["attempts"] > 1
    assert len(edge.router.turns) == got["attempts"] - 1  # the last attempt only found it too late


@pytest.mark.parametrize("after_audio", [False, True])
async def test_an_item_a_region_refuses_fails_with_its_code(edge_of: EdgeOf, after_audio: bool) -> None:
    said = spoken("Way too long.")[1:3] if after_audio else []  # a clause first: no half result kept
    refused = [Routed(region="r1"), *said, ClientRefused(code="text_too_long", message="too long")]
    edge = await edge_of(refused, spoken("Fine."))
    made = await edge.made({"items": [item("Way too long."), item("Fine.")]})
    view = await edge.finished(made["id"])
    bad, good = view["items"]
    assert bad["status"] == "failed" and bad["error"] == {"code": "text_too_long", "message": "too long"}
    assert bad["attempts"] == 1 and "url" not in bad  # not retried: any region would refuse it
    assert good["status"] == "completed" and view["status"] == "completed"
    assert view["counts"]["failed"] == 1 and view["counts"]["completed"] == 1
    content = await edge.http.get(f"/v1/speech/batches/{made['id']}/items/0/content", headers=_auth(KEY))
    assert content.status_code == 404


async def test_cancel_ends_the_waiting_items_and_says_so_in_the_webhook(
    edge_of: EdgeOf, webhook_receiver: WebhookReceiverFactory
) -> None:
    hold = Hold()
    edge, hook = await edge_of([Routed(region="r1"), hold, *spoken("One.")[1:]]), await webhook_receiver()
    made = await edge.made(
        {"items": [item("One."), item("Two."), item("Three.")], "webhook": {"url": hook.url}}
    )
    await asyncio.wait_for(hold.reached.wait(), WAIT_S)  # item 0 is being read
    cancel = await edge.http.post(f"/v1/speech/batches/{made['id']}/cancel", headers=_auth(KEY))
    assert cancel.status_code == 200, cancel.text
    assert [i["status"] for i in cancel.json()["items"]] == ["cancelled"] * 3
    hold.release()
    view = await edge.settled(made["id"])
    assert view["status"] == "cancelled" and view["counts"]["cancelled"] == 3
    (delivery,) = hook.deliveries
    assert delivery.event["type"] == "speech.batch.cancelled"
    assert [t.start.speak_text for t in edge.router.turns] == ["One."]  # Two and Three never read
    content = await edge.http.get(f"/v1/speech/batches/{made['id']}/items/0/content", headers=_auth(KEY))
    assert content.status_code == 404  # read to the end, but cancelled meanwhile: not kept


# -- the speech cache, the audit, the queue ----------------------------------------------------------


async def test_a_repeated_item_is_a_cache_hit_and_every_item_is_booked(edge_of: EdgeOf) -> None:
    edge = await edge_of(spoken("Same again."))
    items = [item("Same again."), item("Same again."), item("Same again.", speed=1.5)]
    made = await edge.made({"items": items})
    view = await edge.finished(made["id"])
    assert [(i["status"], i["cache"]) for i in view["items"]] == [
        ("completed", "miss"), ("completed", "hit"), ("completed", "miss"),
    ]  # fmt: skip
    assert view["items"][1]["regions"] == ["r1"] and len(edge.router.turns) == 2  # no synthesis for 1
    first, second = [(await edge.http.get(i["url"], headers=_auth(KEY))).content for i in view["items"][:2]]
    assert first == second
    records = await edge.services.accounting.audit.recent(key_id(KEY), 10)
    booked = sorted((r.session_id, r.kind, r.outcome, tuple(r.regions), r.cache_hit) for r in records)
    assert booked == [
        (f"{made['id']}-0", "speech", "completed", ("r1",), False),
        (f"{made['id']}-1", "speech", "completed", (), True),  # no region read it again
        (f"{made['id']}-2", "speech", "completed", ("r1",), False),
    ]
    usage = await edge.services.accounting.usage.totals(key_id(KEY))
    # The hit is booked with the audio it returned (what the key got), as for /v1/audio/speech.
    assert usage["turns"] == 3 and usage["audio_out_s"] == pytest.approx(0.3)


async def test_a_long_jobs_items_are_read_in_order(edge_of: EdgeOf) -> None:
    edge = await edge_of(batches=replace(FAST, max_items=20))
    texts = [f"Line {n}." for n in range(12)]
    made = await edge.made({"items": [item(t, response_format="pcm") for t in texts]})
    view = await edge.finished(made["id"])
    assert view["counts"]["completed"] == 12
    assert [t.start.speak_text for t in edge.router.turns] == texts  # not Line 0, 1, 10, 11, 2...


async def test_a_second_job_sees_its_place_behind_the_first(edge_of: EdgeOf) -> None:
    hold = Hold()
    edge = await edge_of([Routed(region="r1"), hold, *spoken("One.")[1:]])
    first = await edge.made({"items": [item("One."), item("Two."), item("Three.")]})
    await asyncio.wait_for(hold.reached.wait(), WAIT_S)  # the only worker is on item 0
    second = await edge.made({"items": [item("Four."), item("Five.")]})
    assert second["status"] == "queued" and second["queue_position"] == 3  # Two and Three ahead
    now = await edge.job(first["id"])
    assert now["status"] == "in_progress" and now["queue_position"] == 1
    assert now["counts"]["in_progress"] == 1 and now["counts"]["queued"] == 2
    hold.release()
    done = await edge.finished(second["id"])
    assert done["queue_position"] is None and done["status"] == "completed"
    assert [t.start.speak_text for t in edge.router.turns] == ["One.", "Two.", "Three.", "Four.", "Five."]


async def test_a_job_outlives_the_edge_that_was_reading_it(edge_of: EdgeOf) -> None:
    hold = Hold()
    one = await edge_of([Routed(region="r1"), hold, *spoken("One.")[1:]])
    made = await one.made({"items": [item("One."), item("Two.")]})
    await asyncio.wait_for(hold.reached.wait(), WAIT_S)  # the first edge is reading item 0
    await one.task.aclose()  # its worker hands the claim back as it stops
    two = await edge_of(spoken("One."))
    view = await two.finished(made["id"])
    assert view["status"] == "completed" and [i["attempts"] for i in view["items"]] == [2, 1]
    # Handed back, item 0 waits behind item 1 (it is claimable from the hand-over on).
    assert sorted(t.start.speak_text for t in two.router.turns) == ["One.", "Two."]


async def test_edges_sharing_the_queue_read_each_item_once(edge_of: EdgeOf) -> None:
    many = replace(FAST, workers=2, max_items=20)
    one, two = await edge_of(batches=many), await edge_of(batches=many)
    texts = [f"Line {n}." for n in range(16)]
    made = await one.made({"items": [item(t, response_format="pcm") for t in texts]})
    view = await two.finished(made["id"])
    assert view["counts"]["completed"] == 16 and all(i["attempts"] == 1 for i in view["items"])
    read = [t.start.speak_text for t in one.router.turns + two.router.turns]
    assert sorted(read) == sorted(texts)  # each once, whichever edge took it


async def test_an_item_an_edge_claimed_then_died_on_is_taken_once_its_lease_passes(edge_of: EdgeOf) -> None:
    edge = await edge_of()
    store = edge.services.batches
    assert store is not None
    edge.services.draining = True  # this edge's worker claims nothing for now
    made = await edge.made({"items": [item()]})
    dead = await store.claim(lease_s=1.0)  # an edge that claims the item, starts it, then dies
    assert dead is not None and dead.job_id == made["id"] and await store.start(dead)
    assert (await edge.job(made["id"]))["items"][0]["status"] == "running"
    edge.services.draining = False
    view = await edge.finished(made["id"])
    assert view["items"][0]["status"] == "completed" and len(edge.router.turns) == 1


async def test_a_jobs_items_are_routed_in_its_keys_residency_as_batch_turns(edge_of: EdgeOf) -> None:
    """The key's residency (a JWT's claim here) goes with the job and every item's turn, and each
    item is a ``batch`` priority turn (the region runs it only on capacity live turns leave idle)."""
    secret = "jwt-secret-for-the-batch-residency-test-0123456789"
    edge = await edge_of(jwt_secret=secret)
    token = jwt.encode({"sub": "eu-tenant", "exp": int(time.time()) + 600, "residency": ["eu"]}, secret)
    made = await edge.made({"items": [item("One."), item("Two.")]}, key=token)
    assert made["residency"] == ["eu"]
    view = await edge.finished(made["id"], key=token)
    assert view["counts"]["completed"] == 2
    assert [(t.session.residency, t.start.priority) for t in edge.router.turns] == [
        (frozenset({"eu"}), "batch")
    ] * 2
