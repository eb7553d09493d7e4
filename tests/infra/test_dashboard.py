"""The Prometheus `voicemesh up` runs, live: it scrapes every edge, region and the vLLM with the metrics
credential, loads the rules, and after real spoken turns through the front door every query of the
Grafana dashboard (infra/dashboards/voicemesh.json) returns data from it.

Shares the session's local deployment (tests/fixtures/infra.py: run under
`flock /tmp/vm-localenv.lock`). Nothing is slept for a fixed time: each check polls Prometheus's
HTTP API until the scrape that carries the turns has landed (bounded by a guard deadline).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx
import pytest

from infra.observability import dashboard_queries
from tests.fixtures.common import SpeechFactory
from tests.fixtures.infra import LocalDeployment
from voicemesh.talk import talk
from wire.audio import CLIENT_RATE, read_wav, resample

GUARD_S = 180.0
"""How long Prometheus may take to show what was scraped (a guard, not a measurement)."""
NAME = re.compile(r"\b(voicemesh_[a-z_]+|vllm:[a-z_]+)")


def query(prom: str, expr: str) -> list[dict[str, Any]]:
    body = httpx.get(f"{prom}/api/v1/query", params={"query": expr}, timeout=30).json()
    assert body["status"] == "success", (expr, body)
    return list(body["data"]["result"])


def until(what: str, check: Any) -> Any:
    deadline = time.monotonic() + GUARD_S
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"Prometheus never showed {what} within {GUARD_S:.0f} s")
        time.sleep(0.5)


def first_audio_count(deployment: LocalDeployment, port: int) -> float:
    """The edge's own count of first-audio observations (its /metrics, read with the admin key)."""
    headers = {"Authorization": f"Bearer {deployment.admin_key}"}
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", headers=headers, timeout=30).text
    found = re.search(r'^voicemesh_edge_stage_seconds_count\{stage="first_audio"\} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_prometheus_scrapes_every_tier_with_its_credential(local_deployment: LocalDeployment) -> None:
    prom = local_deployment.prometheus_url

    def healthy() -> dict[str, list[str]] | None:
        targets = httpx.get(f"{prom}/api/v1/targets", timeout=30).json()["data"]["activeTargets"]
        by_tier: dict[str, list[str]] = {}
        for t in targets:
            by_tier.setdefault(t["labels"]["tier"], []).append(t["health"])
        done = all(h == "up" for hs in by_tier.values() for h in hs)
        return by_tier if done and len(targets) == 5 else None

    by_tier = until("five healthy targets", healthy)
    assert {k: len(v) for k, v in by_tier.items()} == {"edge": 2, "region": 2, "llm": 1}
    # The edge asks for the credential Prometheus sends (as the region does).
    edge_metrics = f"http://127.0.0.1:{local_deployment.edge_ports[0]}/metrics"
    assert httpx.get(edge_metrics, timeout=30).status_code == 401
    rules = httpx.get(f"{prom}/api/v1/rules", timeout=30).json()["data"]["groups"]
    assert {g["name"] for g in rules} == {"voicemesh-latency", "voicemesh-traffic", "voicemesh-alerts"}


async def test_every_dashboard_query_returns_data_after_real_turns(
    local_deployment: LocalDeployment, speech: SpeechFactory
) -> None:
    wav, rate = read_wav(speech("What is the capital of France?"))
    audio = resample(wav, rate, CLIENT_RATE)
    for _ in range(2):  # two spoken turns through the front door (HAProxy -> an edge -> a region)
        reply = await talk(local_deployment.edge_url, local_deployment.api_key, audio, timeout_s=240)
        assert reply.status == "completed", reply.types
    await asyncio.to_thread(check_dashboard, local_deployment)


def check_dashboard(deployment: LocalDeployment) -> None:
    prom = deployment.prometheus_url
    # Wait for the scrape that carries the turns, then for one more (rate() needs two samples).
    counted = sum(first_audio_count(deployment, port) for port in deployment.edge_ports)
    assert counted >= 2
    series = 'voicemesh_edge_stage_seconds_count{stage="first_audio"}'

    def carried() -> bool:
        found = query(prom, f"sum({series})")
        return bool(found) and float(found[0]["value"][1]) >= counted

    def scrapes() -> float:
        return float(query(prom, f"sum(count_over_time({series}[10m]))")[0]["value"][1])

    until(f"the edges' {counted:.0f} first-audio observations", carried)
    before = scrapes()
    until("one more scrape", lambda: scrapes() > before)
    known = set(httpx.get(f"{prom}/api/v1/metadata", timeout=30).json()["data"])
    empty, unknown = [], []
    for title, exprs in dashboard_queries(rate_interval="5m").items():
        for expr in exprs:
            if not query(prom, expr):
                empty.append(f"{title}: {expr}")
            # `or vector(0)` keeps a panel at zero before its first event: its metric must still exist.
            for name in NAME.findall(expr):
                family = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in known and family not in known:
                    unknown.append(f"{title}: {name}")
    assert not empty, "panels whose query returned nothing:\n" + "\n".join(empty)
    assert not unknown, "panels reading metrics no target exposes:\n" + "\n".join(unknown)
    p95 = query(prom, "voicemesh:first_audio_seconds:p95")  # the recording rule, once evaluated
    print(f"recorded p95 time to first audio: {p95[0]['value'][1] if p95 else 'not evaluated yet'} s")
