"""The edge's HTTP surface on stand-ins: ``/metrics`` (the edge's and the router's, Prometheus text),
``/status`` and ``/health``, and one Realtime session over the app's own WebSocket route.

Fast tier: Litestar's test client drives the real app; a scripted router, energy VAD and tone voice
(``edge.testing``) stand in for the models, which are not what is under test here.
"""

from __future__ import annotations

from litestar.testing import TestClient
from prometheus_client.parser import text_string_to_metric_families

from edge.app.asgi import create_app
from edge.shared.settings import EdgeSettings
from edge.testing import ScriptedRouter, memory_services, spoken_reply

KEY = {"Authorization": "Bearer test-key"}
ADMIN = {"Authorization": "Bearer test-admin"}
OPEN = "voicemesh_edge_sessions_open"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _value(text: str, name: str, **labels: str) -> float:
    return _samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_status_health_and_a_session_over_the_app() -> None:
    router = ScriptedRouter(spoken_reply("Hello there."))
    settings = EdgeSettings(api_keys=("test-key",), admin_keys=("test-admin",))
    with TestClient(create_app(memory_services(router, settings=settings))) as http:
        assert http.get("/health").json() == {"status": "ok"}
        assert http.get("/status").status_code == 401
        assert http.get("/status", headers=KEY).status_code == 403  # a caller key is not an admin
        status = http.get("/status", headers=ADMIN).json()
        assert status["edge"]["open_sessions"] == 0
        assert set(status["edge"]["vad"]) == {"rate", "calls", "chunks", "largest_batch"}
        assert status["router"] == {"regions": [], "scripted_turns": 0}

        before = http.get("/metrics", headers=ADMIN)
        assert before.status_code == 200 and before.headers["content-type"].startswith("text/plain")
        names = {f.name for f in text_string_to_metric_families(before.text)}
        # The router's metrics are on the same registry, served by the edge.
        assert {"voicemesh_router_failovers", "voicemesh_router_ttfa_seconds"} <= names
        assert {
            "voicemesh_edge_sessions_open", "voicemesh_edge_client_events", "voicemesh_edge_responses",
            "voicemesh_edge_relay_seconds",
        } <= names  # fmt: skip

        with http.websocket_connect("/v1/realtime?model=x", headers=KEY) as ws:
            assert ws.receive_json()["type"] == "session.created"
            during = http.get("/metrics", headers=ADMIN).text
            assert _value(during, OPEN) == _value(before.text, OPEN) + 1
            item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}
            ws.send_json({"type": "conversation.item.create", "item": item})
            ws.send_json({"type": "response.create"})
            ws.send_json({"type": "response.teleport"})
            while (event := ws.receive_json())["type"] != "response.done":
                pass
            assert event["response"]["metadata"].pop("voicemesh_stages")  # edge/responses/stages.py
            assert event["response"]["metadata"] == {"voicemesh_region": "scripted"}
            assert http.get("/status", headers=ADMIN).json()["edge"]["open_sessions"] == 1

        after = http.get("/metrics", headers=ADMIN).text
        for name, labels, added in [
            ("voicemesh_edge_client_events_total", {"type": "conversation.item.create", "outcome": "ok"}, 1),
            ("voicemesh_edge_client_events_total", {"type": "response.create", "outcome": "ok"}, 1),
            ("voicemesh_edge_client_events_total", {"type": "unparsed", "outcome": "unknown_event"}, 1),
            ("voicemesh_edge_responses_total", {"status": "completed", "served_by": "region"}, 1),
            ("voicemesh_edge_relay_seconds_count", {}, 1),
        ]:
            was = _value(before.text, name, **labels)
            assert _value(after, name, **labels) == was + added, (name, labels)
        assert _value(after, OPEN) == _value(before.text, OPEN)
    assert router.closed  # the app's shutdown closed the router
