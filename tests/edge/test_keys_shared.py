"""Stored keys and their limits across two edges that share nothing but a real Redis: a key revoked
through one edge is refused by the other once ``KeySettings.cache_s`` has passed and its open
session there ends; a key's rate bucket and session cap count connects on both edges together;
the ``voicemesh keys`` CLI drives a running edge; per-key limits fall back to each edge's own count
when Redis is down, and ``/status`` says so.

Each edge is a real uvicorn + Litestar server on loopback with its own ``EdgeServices``; a scripted
router, energy VAD and tone voice (``edge.testing``) stand in for the models, which are not what is
under test.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import websockets
from click.testing import CliRunner
from websockets.asyncio.client import ClientConnection, connect

from edge.app.server import EdgeTask
from edge.shared.errors import TooManySessions
from edge.shared.key_policy import KeyPolicy
from edge.shared.settings import EdgeSettings, LimitSettings
from edge.stores.redis.limits import RedisLimits
from edge.tenancy.keys import KeyRing
from edge.tenancy.shared_limits import SharedKeyLimits
from edge.testing import memory_services
from tests.fixtures.common import free_port
from tests.fixtures.router import KillableRedis
from voicemesh.cli.keys import keys as keys_command
from wire.bounded_redis import BoundedRedis

ADMIN = "admin-key-shared-0123"
CALLER = "caller-key-shared-0123"


class Clock:
    """The key cache's clock on one edge, moved by the test: the cache bound is asserted against
    ``KeySettings.cache_s``, not against how fast this machine happens to be."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Edge:
    task: EdgeTask
    http: str
    ws: str
    clock: Clock

    @property
    def settings(self) -> EdgeSettings:
        return self.task.services.settings


async def _edge(store_url: str) -> Edge:
    settings = EdgeSettings(port=free_port(), api_keys=(CALLER,), admin_keys=(ADMIN,), store_url=store_url)
    services = memory_services(settings=settings)
    clock = Clock()
    ring = services.auth.keys
    services.auth.keys = KeyRing(ring.store, settings.keys, settings.voices, clock=clock)
    task = await EdgeTask.start(settings, services.router, services=services)
    base = f"127.0.0.1:{settings.port}"
    return Edge(task, f"http://{base}", f"ws://{base}/v1/realtime", clock)


@pytest_asyncio.fixture
async def edges(redis_url: str) -> AsyncIterator[tuple[Edge, Edge]]:
    first, second = await _edge(redis_url), await _edge(redis_url)
    try:
        yield first, second
    finally:
        for edge in (first, second):
            await asyncio.wait_for(edge.task.aclose(), 15)


async def _admin(edge: Edge, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=edge.http, headers={"Authorization": f"Bearer {ADMIN}"}) as http:
        res = await http.request(method, path, json=body)
    assert res.is_success, res.text
    data: dict[str, Any] = res.json()
    return data


async def _open(edge: Edge, token: str) -> ClientConnection:
    """A session on ``edge``, its ``session.created`` read."""
    ws = await connect(edge.ws, additional_headers={"Authorization": f"Bearer {token}"})
    assert (await _next(ws, "session.created"))["type"] == "session.created"
    return ws


async def _refused(edge: Edge, token: str) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON body a refused handshake got."""
    with pytest.raises(websockets.InvalidStatus) as info:
        ws = await connect(edge.ws, additional_headers={"Authorization": f"Bearer {token}"})
        await ws.close()
    body: dict[str, Any] = json.loads(info.value.response.body or b"{}")
    return info.value.response.status_code, body


async def _next(ws: ClientConnection, type_: str) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            event: dict[str, Any] = json.loads(await ws.recv())
            if event["type"] == type_:
                return event


# -- revocation ------------------------------------------------------------------------------------------


async def test_a_key_revoked_through_one_edge_is_refused_by_the_other_and_its_session_ends(
    edges: tuple[Edge, Edge],
) -> None:
    one, two = edges
    key = await _admin(one, "POST", "/v1/keys", {"name": "tenant"})
    session = await _open(two, key["secret"])  # edge 2 has never seen the key: Redis told it
    async with httpx.AsyncClient() as http:  # a browser's client secret, minted from the key
        minted = await http.post(
            f"{two.http}/v1/realtime/client_secrets",
            json={},
            headers={"Authorization": f"Bearer {key['secret']}"},
        )
    browser = await _open(two, minted.json()["value"])
    await _admin(one, "DELETE", f"/v1/keys/{key['id']}")

    status, body = await _refused(one, key["secret"])  # the revoking edge forgets at once
    assert status == 401 and "revoked" in body["error"]["message"]
    cache_s = two.settings.keys.cache_s
    two.clock.now += cache_s / 2  # edge 2 may still trust its lookup of the key, within the bound...
    extra = await _open(two, key["secret"])
    two.clock.now += cache_s / 2  # ...and no longer once the bound has passed
    status, body = await _refused(two, key["secret"])
    assert status == 401 and body["error"]["code"] == "invalid_api_key"

    for ws in (session, extra, browser):  # the open sessions end: an error saying why, then a close
        error = await _next(ws, "error")
        assert error["error"]["code"] == "api_key_revoked"
        with pytest.raises(websockets.ConnectionClosed) as closed:
            async with asyncio.timeout(10):
                await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    assert two.task.services.limits.active(key["id"]) == 0  # their slots are free


# -- shared limits ---------------------------------------------------------------------------------------


async def test_a_keys_rate_limit_counts_connects_on_both_edges(edges: tuple[Edge, Edge]) -> None:
    one, two = edges
    burst = 3
    key = await _admin(one, "POST", "/v1/keys", {"name": "rate", "rate_per_s": 0.001, "burst": burst})
    for edge in (one, two, one):  # the burst, spread over both edges
        ws = await _open(edge, key["secret"])
        limits = await _next(ws, "rate_limits.updated")
        await ws.close()
    assert limits["rate_limits"][0]["remaining"] == 0 and limits["rate_limits"][0]["limit"] == burst
    for edge in (two, one):  # the next one on either edge
        status, body = await _refused(edge, key["secret"])
        assert status == 429 and body["error"]["code"] == "rate_limit_exceeded"
        assert "too many requests for this key" in body["error"]["message"]
    ws = await _open(one, CALLER)  # another key's bucket is its own
    await ws.close()


async def test_a_keys_session_cap_counts_sessions_on_both_edges(edges: tuple[Edge, Edge]) -> None:
    one, two = edges
    key = await _admin(one, "POST", "/v1/keys", {"name": "cap", "max_sessions": 2})
    first, second = await _open(one, key["secret"]), await _open(two, key["secret"])
    for edge in (one, two):
        status, body = await _refused(edge, key["secret"])
        assert status == 429 and body["error"]["code"] == "session_limit_exceeded"
        assert "2 open sessions across all edges (limit 2)" in body["error"]["message"]
    await first.close()  # a slot comes free (on edge 1) for a session on edge 2
    async with asyncio.timeout(10):
        while True:
            try:
                third = await _open(two, key["secret"])
                break
            except websockets.InvalidStatus:
                await asyncio.sleep(0.1)  # edge 1 frees the slot once it sees the close
    await second.close()
    await third.close()


async def test_without_redis_each_edge_counts_on_its_own_and_status_says_so(
    killable_redis: KillableRedis,
) -> None:
    redis = killable_redis
    edge = await _edge(redis.url)
    try:
        key = await _admin(edge, "POST", "/v1/keys", {"name": "outage", "max_sessions": 1})
        first = await _open(edge, key["secret"])  # looked up and counted in Redis
        status = await _admin(edge, "GET", "/status")
        assert status["edge"]["limits"] == {"shared": True}
        await first.close()
        redis.kill()
        async with asyncio.timeout(10):
            while (await _admin(edge, "GET", "/status"))["edge"]["limits"]["shared"]:
                ws = await _open(edge, CALLER)  # a connect finds Redis gone
                await ws.close()
        reason = (await _admin(edge, "GET", "/status"))["edge"]["limits"]["reason"]
        assert reason.startswith("redis unreachable") and "per edge" in reason
        # The stored key this edge has seen still opens sessions (past its cache bound: nobody can
        # revoke it while Redis is away), capped by this edge's own count.
        edge.clock.now += 10 * edge.settings.keys.cache_s
        session = await _open(edge, key["secret"])
        status_code, body = await _refused(edge, key["secret"])
        assert status_code == 429 and body["error"]["code"] == "session_limit_exceeded"
        await session.close()
        # A key this edge never saw cannot be checked: a 503 saying why, not a crash.
        code, body = await _refused(edge, "vm_never-seen-by-this-edge")
        assert code == 503 and body["error"]["code"] == "key_store_unavailable"
    finally:
        await asyncio.wait_for(edge.task.aclose(), 15)


# -- the CLI ---------------------------------------------------------------------------------------------


async def _cli(*args: str, home: Path, admin: str | None = ADMIN) -> tuple[int, str, str]:
    """``voicemesh keys ARGS`` as a user runs it (its own process)."""
    env = {**os.environ, "VOICEMESH_HOME": str(home)}
    env.pop("VOICEMESH_ADMIN_KEY", None)
    if admin is not None:
        env["VOICEMESH_ADMIN_KEY"] = admin
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "voicemesh.cli.main", "keys", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(120):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), " ".join(err.decode().split())


async def test_the_cli_creates_lists_rotates_and_revokes_keys_on_a_running_edge(
    edges: tuple[Edge, Edge], tmp_path: Path
) -> None:
    one, two = edges
    code, secret, err = await _cli(
        "--edge", one.http, "create", "cli-tenant", "--residency", "eu", "--max-sessions", "2",
        "--rate", "2", "--burst", "5", "--voices", "jf_alpha,marin", "--priority", "high", home=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    secret = secret.strip()
    assert secret.startswith("vm_") and "shown once" in err
    code, out, err = await _cli("--edge", two.http, "list", "--json", home=tmp_path)  # the other edge
    assert code == 0, err
    listed = next(k for k in json.loads(out) if k["name"] == "cli-tenant")
    assert (listed["residency"], listed["max_sessions"], listed["rate_per_s"], listed["burst"]) == (
        ["eu"],
        2,
        2.0,
        5,
    )
    assert (listed["voices"], listed["priority"]) == (["jf_alpha", "marin"], "high")
    assert secret not in out

    code, new, err = await _cli("--edge", one.http, "rotate", listed["id"], home=tmp_path)
    assert code == 0, err
    new = new.strip()
    status, _ = await _refused(one, secret)  # the old secret: refused
    assert status == 401
    ws = await _open(one, new)  # the new one works
    await ws.close()

    code, _, err = await _cli("--edge", one.http, "revoke", listed["id"], home=tmp_path)
    assert code == 0 and "revoked" in err, err
    status, _ = await _refused(one, new)
    assert status == 401


async def _cli_here(*args: str, home: Path, admin: str | None = ADMIN) -> tuple[int, str]:
    """``voicemesh keys ARGS`` in this process (a thread: the edges run on this event loop), for
    the refusals, where a process start per case would only add time."""
    env = {"VOICEMESH_HOME": str(home), "VOICEMESH_ADMIN_KEY": admin}
    result = await asyncio.to_thread(CliRunner().invoke, keys_command, list(args), env=env)
    return result.exit_code, " ".join(result.output.split())


@pytest.mark.parametrize(
    ("args", "admin", "expected"),
    [
        (("--edge", "UNREACHABLE", "list"), ADMIN, ("no edge answers at", "voicemesh up")),
        (("list",), None, ("no admin key", "VOICEMESH_ADMIN_KEY")),
        (("list",), CALLER, ("403", "use an admin key")),
        (("list",), "not-a-key", ("401", "not valid on this edge")),
        (("revoke", "key_nope"), ADMIN, ("404", "voicemesh keys list")),
        (("create", "x", "--max-sessions", "0"), ADMIN, ("400", "`max_sessions`")),
        (("create", "x", "--voices", "nobody"), ADMIN, ("400", "`voices`", "Supported values")),
    ],
)
async def test_the_cli_says_what_to_do_next_when_refused(
    edges: tuple[Edge, Edge],
    tmp_path: Path,
    args: tuple[str, ...],
    admin: str | None,
    expected: tuple[str, ...],
) -> None:
    one, _ = edges
    if args[:2] == ("--edge", "UNREACHABLE"):
        args = ("--edge", f"http://127.0.0.1:{free_port()}", *args[2:])
    else:
        args = ("--edge", one.http, *args)
    code, output = await _cli_here(*args, home=tmp_path, admin=admin)
    assert code == 1, output
    for text in expected:
        assert text in output, output


async def test_the_slots_of_an_edge_that_stopped_renewing_come_free_after_the_lease(redis_url: str) -> None:
    policy = KeyPolicy(max_sessions=1)
    key_id = f"key_crash_{free_port()}"
    crashed_redis, survivor_redis = BoundedRedis(redis_url), BoundedRedis(redis_url)
    crashed = SharedKeyLimits(LimitSettings(), RedisLimits(crashed_redis), lease_s=1.0)
    survivor = SharedKeyLimits(LimitSettings(), RedisLimits(survivor_redis))
    try:
        await crashed.acquire(key_id, policy)
        with pytest.raises(TooManySessions):
            await survivor.acquire(key_id, policy)
        await crashed.aclose()  # it stops renewing and never releases: as a SIGKILLed edge
        async with asyncio.timeout(10):
            while True:
                try:
                    slot = await survivor.acquire(key_id, policy)
                    break
                except TooManySessions:
                    await asyncio.sleep(0.1)
        with pytest.raises(TooManySessions):  # the slot is the survivor's now
            await survivor.acquire(key_id, policy)
        await survivor.release(slot)
        await survivor.release(await survivor.acquire(key_id, policy))
    finally:
        await survivor.aclose()
        await crashed_redis.aclose()
        await survivor_redis.aclose()
