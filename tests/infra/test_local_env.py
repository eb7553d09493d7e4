"""`voicemesh up` / `infra up|status` / `down`: real Terraform starting real region processes.

One deployment (two regions on loopback attached to the test run's vLLM, a redis-server, two
edges reading the registry the apply wrote and the front door, a real HAProxy, in front of them, all
supervised) is shared by every test here; the tests run in file order, and the last one tears it
down with `voicemesh down`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import uuid
from pathlib import Path

import httpx
import pytest

from infra.processes import is_alive
from tests.fixtures.common import SpeechFactory
from tests.fixtures.infra import LocalDeployment
from voicemesh.drills.edge_kill import QUESTION, EdgeRef, kill_mid_answer
from voicemesh.processes import wait_healthy
from voicemesh.talk import talk
from wire.audio import CLIENT_RATE, float_to_pcm16, read_wav, resample
from wire.client import run_turn
from wire.region_auth import TokenSigner
from wire.region_keys import KeyFile
from wire.turn import TurnStart


def _port_listening(url: str) -> bool:
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_up_brings_up_two_regions_that_answer_health(local_deployment: LocalDeployment) -> None:
    out = local_deployment.up_output
    # 2 regions, Redis, the registry file, 2 edges, the front door, Prometheus.
    assert "Apply complete! Resources: 8 added" in out
    assert "region-eu-west: ready after" in out and "region-us-east: ready after" in out
    assert "edge-paris: ready after" in out and "edge-new-york: ready after" in out
    assert "frontdoor: ready after" in out and "prometheus: ready after" in out
    assert f"clients:  ws://127.0.0.1:{local_deployment.port}/v1/realtime" in out  # THE client URL
    assert f"talk: http://127.0.0.1:{local_deployment.port}/#key=" in out
    assert f"API key: {local_deployment.api_key}" in out
    assert "supervised (pid" in out
    regions = local_deployment.registry()["regions"]
    assert [r["id"] for r in regions] == ["eu-west", "us-east"]
    for r in regions:
        bare = httpx.get(r["url"] + "/health", timeout=5)
        assert bare.status_code == 200 and bare.json() == {"status": "ready"}  # no token: nothing more
        health = httpx.get(r["url"] + "/health", headers=local_deployment.region_auth.headers(), timeout=5)
        assert health.status_code == 200, health.text
        body = health.json()
        assert body["status"] == "ready" and body["region"] == r["id"]
        assert all(body["models"].values())  # warm before Terraform called it created
    keys = local_deployment.state / "region-keys.json"
    assert keys.stat().st_mode & 0o777 == 0o600
    secret = keys.read_text()
    tf_state = (local_deployment.state / "infra" / "local" / "terraform.tfstate").read_text()
    assert (keys.with_suffix(".metrics-token")).read_text().strip() not in tf_state  # Prometheus's: a path
    for key in json.loads(secret)["keys"]:
        assert (
            key["secret"] not in tf_state and key["secret"] not in local_deployment.registry_path.read_text()
        )


def test_registry_lists_the_regions_with_their_outputs(local_deployment: LocalDeployment) -> None:
    reg = local_deployment.registry()
    assert reg["source"] == "terraform:local"
    base = local_deployment.base_port
    eu, us = reg["regions"]
    assert eu == {
        "id": "eu-west",
        "url": f"http://127.0.0.1:{base}",
        "location": {"lat": 50.11, "lon": 8.68},
        "residency": ["eu"],
        "capacity": 4,  # infra/envs/local: max_concurrent, the region's own default
    }
    assert us["url"] == f"http://127.0.0.1:{base + 1}" and us["residency"] == ["us"]
    assert us["location"]["lon"] < 0  # Ashburn is west of Greenwich


def test_edges_listen_on_consecutive_ports_at_their_own_locations(local_deployment: LocalDeployment) -> None:
    admin = {"Authorization": f"Bearer {local_deployment.admin_key}"}
    nearest = {}
    for port, where in zip(local_deployment.edge_ports, ((48.86, 2.35), (40.71, -74.01)), strict=True):
        status = httpx.get(f"http://127.0.0.1:{port}/status", headers=admin, timeout=5)
        assert status.status_code == 200, status.text
        body = status.json()
        assert body["edge"]["store"]["backend"] == "redis" and body["edge"]["store"]["reachable"]
        regions = body["router"]["regions"]
        assert {r["id"] for r in regions} == {"eu-west", "us-east"}
        # The distance prior from the edge's location (what ranks regions before any measurement;
        # other tests of this deployment may have measured some since).
        nearest[where] = min(regions, key=lambda r: r["score_parts"]["latency_prior_s"])["id"]
    assert nearest == {(48.86, 2.35): "eu-west", (40.71, -74.01): "us-east"}


def test_the_front_door_sends_clients_to_the_edges_and_reports_its_own_health(
    local_deployment: LocalDeployment,
) -> None:
    front = f"http://127.0.0.1:{local_deployment.port}"
    admin = {"Authorization": f"Bearer {local_deployment.admin_key}"}
    for _ in range(4):  # plain requests too: each on a fresh connection to one of the edges
        status = httpx.get(f"{front}/status", headers=admin, timeout=5)
        assert status.status_code == 200, status.text
        assert status.json()["edge"]["store"]["backend"] == "redis"
    health = httpx.get(f"{local_deployment.frontdoor_stats_url}/health", timeout=5)
    assert health.status_code == 200 and health.json() == {"status": "ready", "edges_up": 2}, health.text
    stats = httpx.get(f"{local_deployment.frontdoor_stats_url}/stats;csv", timeout=5)
    servers = {line.split(",")[1]: line.split(",")[17] for line in stats.text.splitlines()[1:] if line}
    assert servers["paris"] == "UP" and servers["new-york"] == "UP", stats.text
    infra = local_deployment.voicemesh("infra", "status", "--env", "local")
    assert next(line for line in infra.stderr.splitlines() if "frontdoor" in line).startswith("ready")


def test_up_again_changes_nothing(local_deployment: LocalDeployment) -> None:
    pids = {r: local_deployment.pid(r) for r in ("eu-west", "us-east")}
    again = local_deployment.voicemesh("infra", "up", "--env", "local")  # variables repeat the last run's
    assert again.returncode == 0, again.stderr
    assert "Resources: 0 added, 0 changed, 0 destroyed" in again.stderr
    assert {r: local_deployment.pid(r) for r in pids} == pids


def test_status_reports_every_region_ready(local_deployment: LocalDeployment) -> None:
    status = local_deployment.voicemesh("infra", "status", "--env", "local")
    assert status.returncode == 0, status.stderr
    lines = [line for line in status.stderr.splitlines() if "region-" in line]
    assert len(lines) == 2 and all(line.startswith("ready") for line in lines), status.stderr
    assert "queue_depth=0" in status.stderr


async def test_a_region_from_the_registry_serves_a_turn(
    local_deployment: LocalDeployment, speech: SpeechFactory
) -> None:
    # Through the region turn protocol (wire.client), from the URL the registry gives.
    region = local_deployment.registry()["regions"][0]
    samples, rate = read_wav(speech("What is the capital of France?"))
    pcm = float_to_pcm16(resample(samples, rate, 16_000))
    start = TurnStart(turn_id=uuid.uuid4().hex, audio_bytes=len(pcm), max_output_tokens=40)
    result = await run_turn(region["url"], start, pcm, region=region["id"], auth=local_deployment.region_auth)
    assert result.error is None, result.error
    assert result.status == "completed", result
    assert "capital" in result.transcript.lower()  # whisper base may mishear "France"
    assert result.text.strip() and len(result.audio) > 24_000  # > 0.5 s of 24 kHz PCM16 speech
    assert result.region == "eu-west"


async def test_an_edge_started_from_the_registry_serves_a_turn(
    local_deployment: LocalDeployment, speech: SpeechFactory
) -> None:
    # The stock OpenAI Realtime client (via voicemesh.talk) against the edge `voicemesh up` started.
    samples, rate = read_wav(speech("What is the capital of France?"))
    audio = resample(samples, rate, CLIENT_RATE)
    try:
        reply = await talk(local_deployment.edge_url, local_deployment.api_key, audio, timeout_s=240)
    except TimeoutError:
        log = (local_deployment.state / "edge.log").read_text()[-3000:]
        pytest.fail(f"no reply from the edge within 240 s; its log ends:\n{log}")
    assert "error" not in reply.types, reply.events
    assert reply.status == "completed", reply.types
    assert reply.region in {"eu-west", "us-east"}  # served by a Terraform-provisioned region
    assert reply.text.strip() and len(reply.audio) > CLIENT_RATE  # > 0.5 s of PCM16 speech
    print(f"edge turn via {reply.region}: first audio {reply.first_audio_s}s after end of speech")


async def test_rotate_key_keeps_regions_and_the_edge_serving(
    local_deployment: LocalDeployment, speech: SpeechFactory
) -> None:
    old = TokenSigner(KeyFile(local_deployment.state / "region-keys.json"))
    old_header = {"Authorization": old.authorization()}
    rotated = local_deployment.voicemesh("infra", "rotate-key")
    assert rotated.returncode == 0 and "added key" in rotated.stderr, rotated.stdout + rotated.stderr
    new = TokenSigner(KeyFile(local_deployment.state / "region-keys.json"))
    new_header = {"Authorization": new.authorization()}
    assert new.kid != old.kid
    async with httpx.AsyncClient(timeout=5) as http:
        for region in local_deployment.registry()["regions"]:
            for header in (old_header, new_header):  # the overlap: both accepted, no restart
                health = await http.get(region["url"] + "/health", headers=header)
                assert health.status_code == 200 and "queue_depth" in health.json(), health.text
    samples, rate = read_wav(speech("What is the capital of France?"))
    reply = await talk(
        local_deployment.edge_url,
        local_deployment.api_key,
        resample(samples, rate, CLIENT_RATE),
        timeout_s=240,
    )
    assert reply.status == "completed" and reply.region in {"eu-west", "us-east"}, reply.types


async def test_an_edge_killed_mid_answer_costs_a_reconnect_through_the_front_door(
    local_deployment: LocalDeployment, speech: SpeechFactory
) -> None:
    """The stock openai SDK (its own reconnects, a hook adding ``session_id``) speaks through the
    front door; the edge serving the answer is SIGKILLed once audio flows; the same URL takes the
    SDK to the other edge at once, which resumes the session and finishes the cut answer."""
    samples, rate = read_wav(speech(QUESTION))
    pcm = float_to_pcm16(resample(samples, rate, CLIENT_RATE))
    run_dir = local_deployment.run_dir
    edges = [
        EdgeRef(name, f"http://127.0.0.1:{port}", run_dir / f"edge-{name}.pid")
        for name, port in zip(("paris", "new-york"), local_deployment.edge_ports, strict=True)
    ]
    run = await kill_mid_answer(
        local_deployment.edge_url, local_deployment.api_key, local_deployment.admin_key, edges, pcm,
        timeout_s=300,
    )  # fmt: skip
    print(f"edge killed mid-answer: {run.to_json() | {'arrivals': len(run.arrivals), 'events': None}}")
    assert run.killed in {"paris", "new-york"}
    assert run.reconnects >= 1 and run.session_created_s is not None  # the SDK reconnected by itself
    assert run.resumed and run.continuing, run.events
    assert run.status == "completed", run.events
    heard, said = "".join(run.replayed_heard.split()), "".join(run.heard_before.split())
    assert heard and said.startswith(heard)  # the replayed cut answer is what the client had heard
    assert run.continuation.strip(), "the answer was not finished"
    assert not run.continuation.strip().startswith(run.replayed_heard.strip()[:30])  # not repeated
    assert run.continuation_audio_s is not None  # the continuation's audio was heard
    assert run.silence_s is not None and run.raw_gap_s is not None
    # The supervisor brings the killed edge back behind the front door (later tests need both).
    await wait_healthy(
        f"{local_deployment.frontdoor_stats_url}/health",
        timeout_s=120,
        ready=lambda r: r.json()["edges_up"] == 2,
    )


def test_a_killed_region_comes_back_through_terraform_without_anyone(
    local_deployment: LocalDeployment,
) -> None:
    old = local_deployment.pid("eu-west")
    url = local_deployment.registry()["regions"][0]["url"]
    os.kill(old, signal.SIGKILL)
    t0 = time.monotonic()
    deadline = t0 + 120
    new = None
    while time.monotonic() < deadline:  # no call by the test: the supervisor notices and re-applies
        try:
            new = local_deployment.pid("eu-west")
            if new != old and is_alive(new) and httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except (OSError, ValueError, httpx.HTTPError):
            pass
        time.sleep(0.1)
    recovery_s = time.monotonic() - t0
    supervise_log = local_deployment.state / "supervise.log"
    while "region-eu-west recovered in" not in supervise_log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)  # healthy a moment before Terraform's apply returns and the line is written
    log = supervise_log.read_text()
    assert new is not None and new != old and is_alive(new), log
    assert "region-eu-west died; re-provisioning (terraform apply -replace)" in log
    assert "region-eu-west recovered in" in log
    status = local_deployment.voicemesh("infra", "status", "--env", "local")
    assert status.returncode == 0, status.stderr  # every process ready again, Redis and edges included
    print(f"self-healing: region back {recovery_s:.1f} s after its SIGKILL ({log.splitlines()[-1]})")


def test_the_processes_run_the_command_line_the_drift_check_compares(
    local_deployment: LocalDeployment,
) -> None:
    """Each region's and edge's /proc cmdline is the argv of the env's `commands` output (what
    tests/infra/test_no_drift.py compares with the Kubernetes containers): voicemesh.workloads'."""
    state = json.loads((local_deployment.state / "infra" / "local" / "terraform.tfstate").read_text())
    commands = state["outputs"]["commands"]["value"]
    for name in ("region", "edge"):
        pid = int((local_deployment.run_dir / f"{name}-{commands[name]['id']}.pid").read_text())
        argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]]
        # The console script runs under the venv's interpreter: /proc shows `python .../voicemesh ...`.
        assert argv[-len(commands[name]["argv"]) :] == commands[name]["argv"], (name, argv)
        assert Path(argv[0]).name.startswith("python"), argv
        environ = dict(
            item.decode().split("=", 1)
            for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if item
        )
        assert {k: environ.get(k) for k in commands[name]["env"]} == commands[name]["env"], name


@pytest.mark.ends_local_deployment
def test_down_leaves_no_region_process_and_no_listening_port(local_deployment: LocalDeployment) -> None:
    regions = local_deployment.registry()["regions"]
    pids = [int(p.read_text()) for p in Path(local_deployment.run_dir).glob("*.pid")]
    assert len(pids) == 7  # 2 regions, Redis, 2 edges, the front door, Prometheus
    supervisor = json.loads((local_deployment.state / "ledger.json").read_text())["owner"]
    down = local_deployment.voicemesh("down")
    assert down.returncode == 0, down.stderr
    assert "Destroy complete! Resources: 8 destroyed" in down.stderr
    assert not any(is_alive(pid) for pid in [*pids, supervisor])
    assert not any(_port_listening(r["url"]) for r in regions)
    prometheus = int(local_deployment.prometheus_url.rsplit(":", 1)[1])
    for port in (local_deployment.port, *local_deployment.edge_ports, local_deployment.port + 3, prometheus):
        assert not _port_listening(f"http://127.0.0.1:{port}")
    assert not list(Path(local_deployment.run_dir).glob("*.pid"))
    assert local_deployment.registry()["regions"] == []  # an edge reading it stops routing there
