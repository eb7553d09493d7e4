"""The container image works: built here (Debian's packages and PyPI only), then a region and an edge
run from the image's own filesystem carry a real spoken turn from the stock openai client.

``podman run`` is refused on these machines, so the processes run from the unpacked image under
``chroot`` in new mount and pid namespaces, as the image's user with its environment and entry point
(tests/fixtures/image.py); the network is the host's, so they serve on loopback. The lock test needs
no build.
"""

from __future__ import annotations

import asyncio
import os
import tomllib
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from infra.image.build import LOCK, checkout_root
from tests.fixtures.common import SpeechFactory, free_port
from tests.fixtures.image import (
    ImageBuild,
    image_pid,
    image_process,
    models_bind,
    readonly_copy,
)
from voicemesh.processes import wait_healthy_sync
from voicemesh.talk import talk
from wire.audio import CLIENT_RATE, read_wav, resample

IMAGE_UID = 10001  # the Kubernetes objects rely on it (runAsUser) as on the models' mount path


def _locked() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, _, version = line.split(" ")[0].partition("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_the_lock_pins_every_runtime_dependency_within_pyproject() -> None:
    project = tomllib.loads((checkout_root() / "pyproject.toml").read_text())["project"]
    pins = _locked()
    stale = []
    for spec in map(Requirement, project["dependencies"]):
        version = pins.get(canonicalize_name(spec.name))
        if version is None or not spec.specifier.contains(version, prereleases=True):
            stale.append(f"{spec} (locked: {version})")
    assert not stale, "infra/image/requirements.lock is stale: run `voicemesh image lock`: " + ", ".join(
        stale
    )
    assert all(line.strip().startswith("--hash=sha256:") for line in LOCK.read_text().splitlines()
               if line.startswith("    --hash"))  # fmt: skip
    assert not {"pytest", "mypy", "ruff", "playwright"} & set(pins)  # runtime only: no dev extra


def test_the_image_config_is_what_runtimes_and_kubernetes_expect(voicemesh_image: ImageBuild) -> None:
    c = voicemesh_image.settings
    assert c["User"] == f"{IMAGE_UID}:{IMAGE_UID}"
    assert c["Entrypoint"] == ["voicemesh"]
    assert "VOICEMESH_HOME=/var/lib/voicemesh" in c["Env"]
    assert "/var/lib/voicemesh/models" in c["Volumes"]
    assert set(c["ExposedPorts"]) == {"8080/tcp", "9001/tcp"}
    labels = c["Labels"]
    assert labels["org.opencontainers.image.title"] == "voicemesh"
    assert labels["org.opencontainers.image.licenses"] == "GPL-3.0-or-later"
    version = tomllib.loads((checkout_root() / "pyproject.toml").read_text())["project"]["version"]
    assert labels["org.opencontainers.image.version"] == version
    assert labels["org.opencontainers.image.revision"] not in ("", "unknown")
    assert "org.opencontainers.image.source" in labels
    # The health command: Docker's image config has the field (OCI's has none), so the docker-archive
    # carries it.
    health = voicemesh_image.docker_config["config"]["Healthcheck"]
    assert health["Test"] == ["CMD", "voicemesh", "health"]
    assert voicemesh_image.docker_config["config"]["User"] == c["User"]
    root = voicemesh_image.rootfs
    assert (root / "opt/voicemesh/bin/voicemesh").exists()
    assert os.stat(root / "var/lib/voicemesh").st_uid == IMAGE_UID
    site = root / "opt/voicemesh/lib/python3.11/site-packages"
    installed = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert {"voicemesh", "litestar", "faster_whisper"} <= installed
    assert not {"pytest", "mypy", "ruff", "playwright"} & installed  # the dev extra stays out


def test_a_region_and_an_edge_from_the_image_carry_a_spoken_turn(
    voicemesh_image: ImageBuild, llm_url: str, region_keys: Path, speech: SpeechFactory,
    tmp_path: Path, image_processes: list[object],
) -> None:  # fmt: skip
    keys = readonly_copy(region_keys, tmp_path / "keys", IMAGE_UID)
    binds = {**models_bind(), "/run/voicemesh": keys.parent}
    inside_keys = "/run/voicemesh/" + keys.name
    region_port, edge_port = free_port(), free_port()

    region = image_process(
        voicemesh_image,
        ["region", "serve", "--id", "image-region", "--port", str(region_port), "--llm-url", llm_url,
         "--keys", inside_keys, "--max-concurrent", "1", "--max-queue", "2"],
        log_path=tmp_path / "region.log", binds=binds,
    )  # fmt: skip
    image_processes.append(region)
    wait_healthy_sync(f"http://127.0.0.1:{region_port}/health", timeout_s=180, process=region,
                      log_path=tmp_path / "region.log", what="region from the image")  # fmt: skip

    api_key = "vm-image-test"
    edge = image_process(
        voicemesh_image,
        ["edge", "serve", "--port", str(edge_port), "--region", f"image-region=http://127.0.0.1:{region_port}",
         "--region-keys", inside_keys],
        log_path=tmp_path / "edge.log", binds=binds, env={"VOICEMESH_API_KEY": api_key},
    )  # fmt: skip
    image_processes.append(edge)
    wait_healthy_sync(f"http://127.0.0.1:{edge_port}/health", timeout_s=120, process=edge,
                      log_path=tmp_path / "edge.log", what="edge from the image")  # fmt: skip

    # They really run from the image: its filesystem is their root, its venv their program, its user theirs.
    for launcher in (region, edge):
        pid = image_pid(launcher)
        assert os.readlink(f"/proc/{pid}/root") == str(voicemesh_image.rootfs)
        assert "/opt/voicemesh/bin/voicemesh" in Path(f"/proc/{pid}/cmdline").read_text().split("\0")
        assert os.stat(f"/proc/{pid}").st_uid == IMAGE_UID

    samples, rate = read_wav(speech("What is the capital of France?"))
    loop = asyncio.new_event_loop()  # its own loop: the session's belongs to pytest-asyncio
    try:
        audio = resample(samples, rate, CLIENT_RATE)
        reply = loop.run_until_complete(talk(f"ws://127.0.0.1:{edge_port}/v1", api_key, audio, timeout_s=240))
    finally:
        loop.close()
    assert "error" not in reply.types, reply.events
    assert reply.status == "completed", reply.types
    assert "capital" in reply.transcript.lower(), reply.transcript  # Whisper base may mishear "France"
    assert reply.region == "image-region"
    assert reply.text.strip() and len(reply.audio) > CLIENT_RATE  # > 0.5 s of PCM16 answer audio

    # The image's health command, run from the image, sees the region it serves beside.
    probe = image_process(
        voicemesh_image, ["health", "--url", f"http://127.0.0.1:{region_port}/health"],
        log_path=tmp_path / "health.log", binds={},
    )  # fmt: skip
    assert probe.wait(timeout=60) == 0, (tmp_path / "health.log").read_text()
    assert httpx.get(f"http://127.0.0.1:{edge_port}/health", timeout=5).status_code == 200


@pytest.fixture(autouse=True)
def _no_mount_left_behind(request: pytest.FixtureRequest) -> object:
    """Every mount lives in a namespace that dies with its process: none may show on the host."""
    yield None
    if "voicemesh_image" in request.fixturenames:
        rootfs = str(request.getfixturevalue("voicemesh_image").rootfs)
        assert rootfs not in Path("/proc/self/mountinfo").read_text()
