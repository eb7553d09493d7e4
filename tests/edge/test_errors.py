"""The edge's error hierarchy (``edge/shared/errors.py``): every class carries a status and a code
consistent with its branch (4xx under ``ClientError``, 5xx under ``ServerError``), the module's
docstring tree names exactly the classes there are, no exception class of edge/ lives outside it,
and what real requests are answered with comes from the classes.

Fast tier: Litestar's test client drives the real app (``edge.testing`` stand-ins for the models,
which are not under test). "Redis down" is a loopback port where nothing listens: what a client of a
stopped Redis sees (connection refused), without stopping a shared one.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

import edge
from edge.app.asgi import create_app
from edge.shared import errors
from edge.shared.errors import (
    BadMintRequest,
    ClientError,
    EdgeError,
    InternalError,
    KeyStoreUnavailable,
    NotAuthenticated,
    ServerError,
    StoreUnavailable,
    VoiceStoreUnavailable,
    edge_error,
)
from edge.shared.settings import EdgeSettings
from edge.testing import SessionHarness, memory_services
from wire.errors import BadEvent, NoRegionAvailable, ProtocolError, RegionBusy, VoicemeshError

KEY = "caller-key-0123"
NOT_ANSWERED = {"InvalidPolicy", "WebhookFailed", "WebhookRefused", "BadMessage"}
"""Exception classes of edge/ outside the hierarchy, named in its docstring: never sent to a caller."""


def _tree(cls: type[EdgeError]) -> Iterator[type[EdgeError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _tree(sub)


HIERARCHY = sorted(set(_tree(EdgeError)), key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", HIERARCHY, ids=lambda c: c.__name__)
def test_every_class_carries_a_status_and_a_code_of_its_branch(cls: type[EdgeError]) -> None:
    assert isinstance(cls.status, int) and 400 <= cls.status <= 599, cls.status
    assert re.fullmatch(r"[a-z][a-z_]*[a-z]", cls.code), cls.code
    if cls is EdgeError:
        return
    client, server = issubclass(cls, ClientError), issubclass(cls, ServerError)
    assert client != server, "every class is under exactly one branch"
    if client:
        assert 400 <= cls.status <= 499 and cls.error_type == "invalid_request_error"
        assert issubclass(cls, ProtocolError)  # the router and the edge treat it as the client's
    else:
        assert 500 <= cls.status <= 599 and cls.error_type == "server_error"
        assert not issubclass(cls, ProtocolError)  # an outage is never the client's fault
    assert cls.__module__ == "edge.shared.errors" and getattr(errors, cls.__name__) is cls


def test_store_outages_are_server_faults_answered_503() -> None:
    for cls in _tree(StoreUnavailable):
        assert issubclass(cls, ServerError) and not issubclass(cls, ProtocolError)
        assert cls.status == 503


def test_the_docstring_tree_names_every_class_and_no_other() -> None:
    assert errors.__doc__ is not None
    named = set(re.findall(r"^\s*\* (\w+)", errors.__doc__, re.MULTILINE))
    assert named - {"VoicemeshError"} == {c.__name__ for c in HIERARCHY}


def test_no_exception_class_of_edge_lives_outside_the_hierarchy() -> None:
    defined: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(edge.__path__, "edge."):
        module = importlib.import_module(info.name)
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == info.name:
                defined[f"{info.name}.{name}"] = obj
    outside = {
        where
        for where, cls in defined.items()
        if not issubclass(cls, EdgeError) and cls.__name__ not in NOT_ANSWERED
    }
    assert outside == set(), "add them to edge/shared/errors.py (or say in its docstring why not)"
    assert {c.__name__ for c in defined.values()} >= NOT_ANSWERED  # the walk reached every package


def test_wire_errors_are_answered_by_the_fault_the_wire_gives_them() -> None:
    bad = edge_error(BadEvent("event must be a JSON object", code="invalid_json"))
    assert (bad.status, bad.error_type, bad.code) == (400, "invalid_request_error", "invalid_json")
    for failure in (NoRegionAvailable("no region could serve this"), RegionBusy("full", region="r1")):
        answered = edge_error(failure)
        assert (answered.status, answered.error_type) == (503, "server_error")
        assert (answered.code, answered.message) == (failure.code, failure.message)
    internal = InternalError("internal error handling the event: KeyError")
    assert edge_error(internal) is internal and internal.status == 500


# -- the answers of real requests --------------------------------------------------------------------------


def _dead_redis() -> str:
    """A Redis URL on a loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def _answer(res: Any) -> tuple[int, str, str]:
    error = res.json()["error"]
    assert error["message"], error
    return res.status_code, error["type"], error["code"]


def _of(cls: type[EdgeError]) -> tuple[int, str, str]:
    return cls.status, cls.error_type, cls.code


def test_http_refusals_are_the_status_type_and_code_of_their_class() -> None:
    with TestClient(create_app(memory_services(settings=EdgeSettings(api_keys=(KEY,))))) as http:
        bad_json = http.post(
            "/v1/realtime/client_secrets",
            content=b'{"expires_after": ',
            headers={"Authorization": f"Bearer {KEY}"},
        )
        assert (
            _answer(bad_json)
            == _of(BadMintRequest)
            == (400, "invalid_request_error", "invalid_request_error")
        )
        assert "not JSON" in bad_json.json()["error"]["message"]
        unknown = http.post(
            "/v1/realtime/client_secrets", json={}, headers={"Authorization": "Bearer vm_nobody"}
        )
        assert _answer(unknown) == _of(NotAuthenticated) == (401, "invalid_request_error", "invalid_api_key")


def test_a_redis_outage_is_a_503_server_error_saying_why() -> None:
    settings = EdgeSettings(api_keys=(KEY,), store_url=_dead_redis(), redis_timeout_s=0.5)
    with TestClient(create_app(memory_services(settings=settings))) as http:
        # A stored key this edge never checked can only be looked up in Redis: down, it is a 503.
        keyed = http.post(
            "/v1/realtime/client_secrets", json={}, headers={"Authorization": "Bearer vm_unseen"}
        )
        assert _answer(keyed) == _of(KeyStoreUnavailable) == (503, "server_error", "key_store_unavailable")
        assert "retry" in keyed.json()["error"]["message"]
        voices = http.get("/v1/voices", headers={"Authorization": f"Bearer {KEY}"})
        assert (
            _answer(voices) == _of(VoiceStoreUnavailable) == (503, "server_error", "voice_store_unavailable")
        )
        assert "unreachable" in voices.json()["error"]["message"]


async def test_realtime_error_events_carry_the_type_and_code_of_their_class() -> None:
    settings = EdgeSettings(api_keys=(KEY,), store_url=_dead_redis(), redis_timeout_s=0.5)
    async with SessionHarness(memory_services(settings=settings)) as session:
        await session.send("{not json")
        # A custom voice is looked up in the voice store: Redis down, the event is a server error.
        voice = {"output": {"voice": {"id": "voice_0123"}}}
        await session.send(
            {"type": "session.update", "event_id": "evt_v", "session": {"type": "realtime", "audio": voice}}
        )
        bad, outage = (e["error"] for e in session.of_type("error"))
    assert (bad["type"], bad["code"]) == ("invalid_request_error", "invalid_json")
    assert (outage["type"], outage["code"], outage["event_id"]) == (
        VoiceStoreUnavailable.error_type, VoiceStoreUnavailable.code, "evt_v"
    )  # fmt: skip


def test_a_bare_wire_error_is_answered_by_its_fault() -> None:
    for cls, status in (
        (VoicemeshError, 503),
        (ProtocolError, 400),
        (BadEvent, 400),
        (NoRegionAvailable, 503),
    ):
        assert edge_error(cls("x")).status == status, cls
