"""``voicemesh image build|lock`` (the container image: docs/image.md) and ``voicemesh health``
(the image's health command)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from voicemesh import paths
from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, progress
from wire.errors import VoicemeshError

HEALTH_URLS_ENV = "VOICEMESH_HEALTH_URLS"
DEFAULT_HEALTH_URLS = ("http://127.0.0.1:8080/health", "http://127.0.0.1:9001/health")
"""An edge's and a region's default ports: the image runs one or the other."""


@cli.group()
def image() -> None:
    """The container image (OCI): build it offline, pin its dependencies."""


def downloads_dir() -> Path:
    """The wheelhouse and pip cache that builds share (per user), so a rebuild downloads nothing."""
    return paths.home() / "image" / "downloads"


@image.command("build")
@click.option("--tag", default=None, help="Image name (default: localhost/voicemesh:<version>).")
@click.option(
    "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="OCI archive to write (default: dist/voicemesh-<version>.oci.tar in the checkout).",
)  # fmt: skip
def build(tag: str | None, output: Path | None) -> None:
    """Build the image from this checkout, Debian's packages and PyPI (no registry image needed)."""
    from infra.image.build import build_image

    try:
        built = build_image(downloads=downloads_dir(), output=output, tag=tag, report=progress)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    console.print(f"[green]{built.tag}[/green] is in podman's storage; the archive is {built.archive}")
    console.print(f"  podman load -i {built.archive}")
    console.print(f"  docker load -i {built.docker_archive}   # keeps the HEALTHCHECK")


@image.command("lock")
def lock() -> None:
    """Re-pin the image's runtime dependencies (infra/image/requirements.lock, with hashes)."""
    from infra.image.lock import compile_lock

    try:
        compile_lock(report=progress)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)


@cli.command("health")
@click.option(
    "--url", "urls", multiple=True, help=f"Health URL(s) (default: ${HEALTH_URLS_ENV} or 8080, 9001)."
)
def health(urls: tuple[str, ...]) -> None:
    """Exit 0 when any given /health answers 200 (the image's HEALTHCHECK)."""
    import httpx

    urls = urls or tuple(os.environ.get(HEALTH_URLS_ENV, "").split()) or DEFAULT_HEALTH_URLS
    problems = []
    for url in urls:
        try:
            response = httpx.get(url, timeout=3)
        except httpx.HTTPError as exc:
            problems.append(f"{url}: {exc!r}")
            continue
        if response.status_code == 200:
            console.print(f"{url}: {response.text.strip()[:200]}")
            return
        problems.append(f"{url}: HTTP {response.status_code}")
    fail("not healthy: " + "; ".join(problems))
