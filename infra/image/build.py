"""Build the voicemesh OCI image from the checkout, Debian's packages and PyPI (no registry image).

Steps, each reported as it starts: check the tools; make the base image with mmdebstrap (Debian
bookworm minbase + ``apt-packages.txt``) and ``podman import`` it, once per package list; build the
voicemesh wheel from a copy of the source; stage the context (Containerfile, package list, lock,
wheel); ``buildah bud --isolation chroot`` (``podman run`` is refused on some hosts, buildah's chroot
isolation is not); ``podman save`` it as an OCI archive and as a docker-archive. Temporary files
are removed and a partial archive never replaces a finished one, whatever stops the build (Ctrl-C
included).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from infra.errors import InfraError
from wire.files import atomic_path

Report = Callable[[str], None]

HERE = Path(__file__).resolve().parent
CONTAINERFILE = HERE / "Containerfile"
APT_PACKAGES = HERE / "apt-packages.txt"
LOCK = HERE / "requirements.lock"
SUITE = "bookworm"  # Debian 12: its python3 is 3.11, the version voicemesh needs
PACKAGE_DIRS = ("wire", "edge", "region", "router", "infra", "voicemesh")
"""What the wheel is made of (pyproject's packages.find), with pyproject.toml and README.md."""

# Debian package of each tool, for the "install it" message.
TOOLS = {"podman": "podman", "buildah": "buildah", "mmdebstrap": "mmdebstrap", "newuidmap": "uidmap"}
INSTALL_HINT = "apt-get install podman buildah mmdebstrap umoci skopeo uidmap"


class ImageBuildError(InfraError):
    code = "image_build_failed"


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    """``localhost/voicemesh:<version>`` in the local containers storage."""
    archive: Path
    """The OCI archive (``podman load -i``, ``skopeo``, ``umoci``): the standard form, which has no
    health command (OCI's image config has no such field)."""
    docker_archive: Path
    """The same image as a docker-archive (``docker load -i``, ``podman load -i``), with its HEALTHCHECK."""
    version: str
    key: str


def checkout_root() -> Path:
    """The voicemesh checkout this module runs from (the image is built from its source)."""
    root = HERE.parents[1]
    pyproject = root / "pyproject.toml"
    if not pyproject.exists() or tomllib.loads(pyproject.read_text())["project"]["name"] != "voicemesh":
        raise ImageBuildError(
            f"no voicemesh checkout around {HERE}: run `voicemesh image build` from a clone's "
            "editable install (`make python-env`)"
        )
    return root


def project_version(root: Path) -> str:
    return str(tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"])


def _source_files(root: Path) -> Iterator[Path]:
    for name in ("pyproject.toml", "README.md"):
        yield root / name
    for pkg in PACKAGE_DIRS:
        for path in sorted((root / pkg).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                yield path


def cache_key(root: Path) -> str:
    """A digest of everything that goes into the image: the source the wheel is made of (this file
    among it), the lock, the Containerfile and the Debian package list."""
    digest = hashlib.sha256()
    for path in [*_source_files(root), CONTAINERFILE, APT_PACKAGES, LOCK]:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def apt_packages() -> list[str]:
    lines = (line.strip() for line in APT_PACKAGES.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def check_tools() -> None:
    missing = [pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None]
    if missing:
        raise ImageBuildError(
            f"missing {', '.join(missing)}: run `{INSTALL_HINT}` (or `make system-packages`), then retry"
        )


def _run(cmd: Sequence[str], report: Report, what: str, *, show: Callable[[str], bool] | None = None) -> None:
    """Run ``cmd``, passing the lines ``show`` picks to ``report``; on failure the output's tail
    goes into the error."""
    tail: deque[str] = deque(maxlen=40)
    # In a pid namespace of its own: when the tool ends (Ctrl-C included), the kernel ends everything it
    # started there, such as the pip that buildah runs in the image's chroot, in a session of its own.
    proc = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--kill-child", *cmd],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip()
            tail.append(line)
            if show is not None and show(line):
                report(f"{what}: {line[:160]}")
    finally:
        if proc.poll() is None:  # interrupted: the child got the same SIGINT; do not leave it behind
            proc.terminate()
        proc.wait()
    if proc.returncode != 0:
        raise ImageBuildError(f"{what} failed (exit {proc.returncode}):\n" + "\n".join(tail))


def _podman_has(image: str) -> bool:
    return subprocess.run(["podman", "image", "exists", image], capture_output=True).returncode == 0


def _image_id(image: str) -> str:
    proc = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True
    )
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _drop_if_untagged(image_id: str) -> None:
    """The image a rebuild took the tag from (1.2 GB a build); kept if anything still names it."""
    proc = subprocess.run(["podman", "image", "inspect", "--format", "{{len .RepoTags}}", image_id],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode == 0 and proc.stdout.strip() == "0":
        subprocess.run(["podman", "rmi", image_id], capture_output=True)


def ensure_base(report: Report) -> str:
    """``localhost/voicemesh-base:bookworm-<digest of the package list>``, made once by mmdebstrap."""
    packages = apt_packages()
    digest = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:12]
    base = f"localhost/voicemesh-base:{SUITE}-{digest}"
    if _podman_has(base):
        report(f"base image {base}: already built")
        return base
    report(f"base image: mmdebstrap {SUITE} minbase + {', '.join(packages)} (Debian's packages, ~1 min)")
    with tempfile.TemporaryDirectory(prefix="voicemesh-base-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        _run(
            ["mmdebstrap", "--variant=minbase", "--include=" + ",".join(packages), SUITE, str(rootfs)],
            report, "mmdebstrap", show=lambda line: line.startswith(("I: ", "E: ")),
        )  # fmt: skip
        report(f"base image: podman import as {base}")
        _run(["podman", "import", str(rootfs), base], report, "podman import")
    return base


def build_wheel(root: Path, out: Path, report: Report) -> Path:
    """The voicemesh wheel, built from a copy of the source (the checkout gets no build/ left in it)."""
    report("wheel: building voicemesh from the checkout's source")
    with tempfile.TemporaryDirectory(prefix="voicemesh-src-") as tmp:
        src = Path(tmp)
        for path in _source_files(root):
            dest = src / path.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(src)],
             report, "pip wheel")  # fmt: skip
    wheels = sorted(out.glob("voicemesh-*.whl"))
    if len(wheels) != 1:
        raise ImageBuildError(f"pip wheel made {len(wheels)} voicemesh wheels in {out}, expected one")
    return wheels[0]


BUILD_REQUIREMENTS = ("setuptools", "wheel")
"""What pip needs to build the lock's sdists (python-terraform) with no index."""


def download_wheelhouse(wheelhouse: Path, report: Report) -> None:
    """Every locked distribution (hash-checked) plus the sdists' build requirements, into
    ``wheelhouse``; what is there already is not downloaded again."""
    report(f"downloads: the locked dependencies into {wheelhouse} (hash-checked; ~1 GB the first time)")
    pip = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--progress-bar", "off",
           "-d", str(wheelhouse)]  # fmt: skip
    _run([*pip, "--require-hashes", "--no-deps", "-r", str(LOCK)], report, "pip download",
         show=lambda line: line.startswith("Collecting"))  # fmt: skip
    _run([*pip, *BUILD_REQUIREMENTS], report, "pip download")


def host_ca_bundle() -> Path | None:
    """The CA bundle this host's pip trusts (a TLS-intercepting proxy's CA lives there), if any."""
    for var in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        value = os.environ.get(var)
        if value and Path(value).is_file():
            return Path(value)
    system = Path("/etc/ssl/certs/ca-certificates.crt")
    return system if system.is_file() else None


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def revision(root: Path) -> str:
    rev = _git(root, "rev-parse", "HEAD") or "unknown"
    return rev + ("-dirty" if _git(root, "status", "--porcelain", "--untracked-files=no") else "")


def _is_progress(line: str) -> bool:
    return line.startswith(
        ("STEP ", "Collecting ", "Installing collected", "Successfully installed", "ERROR", "Error")
    )


def _drop_stale_builds(base: str, report: Report) -> None:
    """Remove buildah working containers an interrupted build of ours left on ``base`` (a SIGKILLed
    buildah cannot remove its own): each holds a copy of the base's filesystem."""
    listed = subprocess.run(
        ["buildah", "containers", "--format", "{{.ContainerID}} {{.ImageName}}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    stale = [line.split()[0] for line in listed.stdout.splitlines() if line.split()[1:] == [base]]
    if stale:
        report(f"image: removing {len(stale)} working container(s) an interrupted build left")
        subprocess.run(["buildah", "rm", *stale], capture_output=True, check=False)


def build_image(
    *, downloads: Path, output: Path | None = None, tag: str | None = None, report: Report = print
) -> BuiltImage:
    """Build the image into the local containers storage and write its OCI archive to ``output``
    (default: ``dist/voicemesh-<version>.oci.tar`` in the checkout) and its docker-archive beside it
    (``.docker.tar``). ``downloads`` keeps the wheelhouse and pip's cache (the wheels it built) for
    the next build, so a rebuild downloads nothing again."""
    check_tools()
    root = checkout_root()
    version = project_version(root)
    tag = tag or f"localhost/voicemesh:{version}"
    output = output or root / "dist" / f"voicemesh-{version}.oci.tar"
    key = cache_key(root)
    base = ensure_base(report)
    _drop_stale_builds(base, report)
    wheelhouse, pip_cache = downloads / "wheelhouse", downloads / "pip-cache"
    pip_cache.mkdir(parents=True, exist_ok=True)
    previous = _image_id(tag)
    download_wheelhouse(wheelhouse, report)
    with tempfile.TemporaryDirectory(prefix="voicemesh-image-") as tmp:
        context = Path(tmp)
        for path in (CONTAINERFILE, APT_PACKAGES, LOCK):
            shutil.copy2(path, context / path.name)
        build_wheel(root, context / "dist", report)
        cmd = [
            # docker format: the only one that records HEALTHCHECK (OCI's image config has no field for it).
            "buildah", "bud", "--format", "docker", "--isolation", "chroot", "--layers=false", "--force-rm",
            "--tag", tag,
            "--volume", f"{pip_cache}:/root/.cache/pip",
            "--volume", f"{wheelhouse}:/var/cache/voicemesh-wheels:ro",
            "--build-arg", f"BASE={base}", "--build-arg", f"VERSION={version}",
            "--build-arg", f"REVISION={revision(root)}",
            "--file", str(context / "Containerfile"),
        ]  # fmt: skip
        source = _git(root, "remote", "get-url", "origin")
        if source:
            cmd += ["--build-arg", f"SOURCE={source}"]
        ca = host_ca_bundle()
        if ca is not None:
            cmd += ["--volume", f"{ca}:/run/voicemesh-build-ca.crt:ro",
                    "--build-arg", "PIP_CERT=/run/voicemesh-build-ca.crt"]  # fmt: skip
        report(f"image: buildah bud {tag} (pip installs the locked dependencies, ~2 min cold)")
        _run([*cmd, str(context)], report, "buildah", show=_is_progress)
    if previous and previous != _image_id(tag):
        _drop_if_untagged(previous)
    docker_output = output.with_name(
        output.name.removesuffix(".oci.tar").removesuffix(".tar") + ".docker.tar"
    )
    for fmt, path in (("oci-archive", output), ("docker-archive", docker_output)):
        report(f"archive: podman save --format {fmt} -o {path} (~1 min)")
        with atomic_path(path) as part:
            _run(["podman", "save", "--format", fmt, "-o", str(part), tag], report, "podman save")
    report(f"built {tag}: {output} ({output.stat().st_size / 1e6:.0f} MB), {docker_output}")
    return BuiltImage(tag=tag, archive=output, docker_archive=docker_output, version=version, key=key)
