"""Session state and client secrets in Redis: two edges sharing one store act as one."""

from __future__ import annotations

import httpx
import pytest

from edge.shared.state import SessionState, SessionStore
from edge.stores.shared_store import open_edge_store
from tests.edge.conftest import session_id
from tests.fixtures.common import free_port
from tests.fixtures.edge import EdgeFactory
from voicemesh.realtime import client
from wire.turn import Message

pytestmark = pytest.mark.slow  # real models / regions / browser


async def test_redis_store_round_trips_session_state(redis_url: str) -> None:
    store = SessionStore(open_edge_store(redis_url), ttl_s=60)
    state = SessionState(id="sess_redis", key_id="k", voice="jf_alpha", history=[Message("user", "hi")])
    await store.save(state)
    loaded = await store.load("sess_redis")
    assert loaded == state
    await store.delete("sess_redis")
    assert await store.load("sess_redis") is None


async def test_client_secret_minted_on_one_edge_works_on_another(
    edge_factory: EdgeFactory, redis_url: str
) -> None:
    nowhere = [("nowhere", f"http://127.0.0.1:{free_port()}")]
    first = await edge_factory(nowhere, store_url=redis_url)
    second = await edge_factory(nowhere, store_url=redis_url)
    async with httpx.AsyncClient() as http:
        minted = await http.post(
            f"{first.http_url}/v1/realtime/client_secrets", json={},
            headers={"Authorization": f"Bearer {first.api_key}"},
        )  # fmt: skip
    secret = minted.json()["value"]
    async with client(second.url, secret).realtime.connect(model="x") as conn:
        sid = session_id(await conn.recv())
        # Live session state is in the shared store, readable by the other edge.
        assert (await first.services.sessions.load(sid)) is not None
