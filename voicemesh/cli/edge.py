"""``voicemesh edge serve``, ``voicemesh talk`` and ``voicemesh bench edge``."""

from __future__ import annotations

import asyncio
import os
import secrets
from dataclasses import replace
from pathlib import Path

import click

from edge.audio.silero import RUNTIMES
from edge.shared.settings import BackchannelSettings, ContentLimits, EdgeSettings, LimitSettings, VadSettings
from voicemesh.cli.common import bench, cli, console, fail, profile_option, progress, run_until_signal


@cli.group()
def edge() -> None:
    """The edge: OpenAI Realtime WebSocket, VAD, barge-in and the fallback voice."""


def api_keys_from_env(prefix: str = "VOICEMESH_API") -> tuple[str, ...]:
    """``VOICEMESH_API_KEY`` (one) and ``VOICEMESH_API_KEYS`` (comma-separated); with
    ``prefix="VOICEMESH_ADMIN"`` the admin keys (``/status``, the ops page) the same way."""
    keys = [os.environ.get(f"{prefix}_KEY", "")]
    keys += os.environ.get(f"{prefix}_KEYS", "").split(",")
    return tuple(dict.fromkeys(k.strip() for k in keys if k.strip()))


def keys_from_file(path: str, what: str) -> tuple[str, ...]:
    """Keys from a mounted file (a Kubernetes Secret, or the local state's 0600 file): one per line or
    comma-separated; blank lines and ``#`` comments skipped. The same file layout serves both
    deployments, so no secret passes through a command line or Terraform's state."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        fail(f"cannot read the {what} file {path}: {exc.strerror or exc}; check the path and its permissions")
    lines = (line.split("#", 1)[0] for line in text.splitlines())
    keys = tuple(dict.fromkeys(k.strip() for line in lines for k in line.split(",") if k.strip()))
    if not keys:
        fail(f"the {what} file {path} holds no key: one key per line")
    return keys


vad_runtime_option = click.option(
    "--vad-runtime", type=click.Choice(RUNTIMES), default="openvino", show_default=True,
    help="What runs Silero VAD (onnxruntime: if OpenVINO will not load on this CPU).",
)  # fmt: skip


def edge_settings(
    *, profile: str | None = None, host: str = "127.0.0.1", port: int = 8080, api_keys: tuple[str, ...] = (),
    vad_model: str | None = None, store_url: str | None = None, admin_keys: tuple[str, ...] = (),
    vad_runtime: str = "openvino",
) -> EdgeSettings:  # fmt: skip
    from voicemesh.profiles import backchannel_ms, load_profile, speculate_after_ms

    p = load_profile(profile)
    bound = backchannel_ms(BackchannelSettings.max_ms)
    backchannel = BackchannelSettings(enabled=bound > 0, max_ms=bound or BackchannelSettings.max_ms)
    vad = VadSettings(
        speculate_after_ms=speculate_after_ms(VadSettings.speculate_after_ms), backchannel=backchannel
    )
    return EdgeSettings(
        host=host, port=port, api_keys=api_keys, admin_keys=admin_keys,
        jwt_secret=os.environ.get("VOICEMESH_JWT_SECRET") or None,
        vad_model=vad_model or p.edge.vad_model, vad_runtime=vad_runtime, piper_model=p.edge.piper_model,
        turn_model=p.edge.turn_model,
        store_url=store_url,
        voices=p.voices, models=p.model_names(),
        limits=LimitSettings(content=ContentLimits(context_tokens=p.context_tokens)), vad=vad,
    )  # fmt: skip


def region_registry(regions: tuple[str, ...]) -> object:
    """``--region [ID=]URL`` flags as a registry (ids default to region-1, region-2, ...)."""
    from router.registry import RegionRecord, Registry

    records = []
    for i, spec in enumerate(regions, 1):
        rid, _, url = spec.rpartition("=") if "=" in spec.split("://")[0] else ("", "", spec)
        records.append(RegionRecord(id=rid or f"region-{i}", url=url))
    return Registry(regions=records, source="--region")


@edge.command("serve")
@click.option(
    "--registry", type=click.Path(dir_okay=False), default=None, help="Region registry file (watched)."
)
@click.option(
    "--region", "regions", multiple=True, help="[ID=]URL of a region (repeatable), not with --registry."
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--vad-model", default=None, help="Silero VAD ONNX file (default: the profile's).")
@vad_runtime_option
@click.option("--store-url", default=None, help="redis://... to keep sessions and client secrets in Redis.")
@click.option(
    "--redis-url",
    envvar="VOICEMESH_REDIS_URL",
    default=None,
    help="redis://... to share circuit-breaker state with other edges (default: in memory).",
)
@click.option(
    "--location",
    envvar="VOICEMESH_EDGE_LOCATION",
    default="0,0",
    show_default=True,
    help="LAT,LON of this edge: the distance prior for regions not measured yet.",
)
@click.option("--max-sessions-per-key", default=50, show_default=True, type=int)
@click.option("--connect-burst", default=20, show_default=True, type=int, help="Sessions a key opens at once")
@click.option(
    "--api-keys-file", envvar="VOICEMESH_API_KEYS_FILE", default=None, type=click.Path(dir_okay=False),
    help="File of the API keys callers use (one per line); default: $VOICEMESH_API_KEY(S).",
)  # fmt: skip
@click.option(
    "--admin-keys-file", envvar="VOICEMESH_ADMIN_KEYS_FILE", default=None, type=click.Path(dir_okay=False),
    help="File of the admin keys (/status, the ops page; one per line); default: $VOICEMESH_ADMIN_KEY(S).",
)  # fmt: skip
@click.option(
    "--region-keys", envvar="VOICEMESH_REGION_KEYS", default=None, type=click.Path(dir_okay=False),
    help="Region key set: the router signs a short-lived token for every region connection and probe.",
)  # fmt: skip
@click.option(
    "--region-ca", envvar="VOICEMESH_REGION_CA", default=None, type=click.Path(exists=True, dir_okay=False),
    help="CA bundle (PEM) that https/wss region URLs are verified against (default: system CAs).",
)  # fmt: skip
@profile_option
def serve(
    registry: str | None, regions: tuple[str, ...], host: str, port: int, vad_model: str | None,
    vad_runtime: str, store_url: str | None, redis_url: str | None, location: str, max_sessions_per_key: int,
    connect_burst: int, api_keys_file: str | None, admin_keys_file: str | None, region_keys: str | None,
    region_ca: str | None, profile: str | None,
) -> None:  # fmt: skip
    """Serve the edge in the foreground until interrupted."""
    from edge.app.server import serve_edge
    from edge.app.services import EdgeServices, open_redis
    from router.core import Router
    from router.registry import Location, Registry
    from router.settings import RouterSettings
    from wire.region_auth import CA_ENV, KEYS_ENV
    from wire.tracing import TracingSettingsError, setup_tracing

    try:
        lat, lon = (float(v) for v in location.split(","))
    except ValueError:
        fail(f"--location must be LAT,LON (e.g. 50.11,8.68), not {location!r}")
    if not registry and not regions:
        fail("give the regions: --registry FILE (from `voicemesh infra up`) or --region URL")
    keys = keys_from_file(api_keys_file, "API keys") if api_keys_file else api_keys_from_env()
    if not keys:
        keys = ("vm-" + secrets.token_urlsafe(24),)
        console.print(f"no VOICEMESH_API_KEY set: this edge accepts the generated key [bold]{keys[0]}[/bold]")
    admin_keys = (
        keys_from_file(admin_keys_file, "admin keys")
        if admin_keys_file
        else api_keys_from_env("VOICEMESH_ADMIN")
    )
    if not admin_keys:
        admin_keys = ("vma-" + secrets.token_urlsafe(24),)
        console.print(f"no VOICEMESH_ADMIN_KEY set: /status and /ops accept the generated key "
                      f"[bold]{admin_keys[0]}[/bold]")  # fmt: skip
    settings = edge_settings(profile=profile, host=host, port=port, api_keys=keys, vad_model=vad_model,
                             vad_runtime=vad_runtime, store_url=store_url, admin_keys=admin_keys)  # fmt: skip
    limits = replace(settings.limits, max_sessions_per_key=max_sessions_per_key, connect_burst=connect_burst)
    settings = replace(settings, limits=limits)

    try:
        setup_tracing("voicemesh-edge")  # the router's spans are this process's too
    except TracingSettingsError as exc:
        fail(str(exc))
    # The flags stand for the variables for every region client of this process (pool, probes).
    os.environ.update({k: v for k, v in ((KEYS_ENV, region_keys), (CA_ENV, region_ca)) if v})

    async def main(stop: asyncio.Event) -> None:
        reg = region_registry(regions) if regions else None
        assert reg is None or isinstance(reg, Registry)
        router_settings = RouterSettings(
            registry_path=registry or "", location=Location(lat, lon), redis_url=redis_url,
            region_keys_path=region_keys or "", region_ca_path=region_ca or "",
        )  # fmt: skip
        # One Redis client for the process: the edge's stores and (on the same URL) the router's breakers.
        redis = open_redis(settings)
        router = Router(router_settings, registry=reg, redis=redis)
        await router.start()
        services = EdgeServices.build(settings, router, redis=redis)  # closes ``redis`` with itself
        await serve_edge(settings, router, stop=stop, report=progress, services=services)
        progress("edge: stopped")

    run_until_signal(main)


@cli.command("talk")
@click.argument("in_wav", type=click.Path(exists=True, dir_okay=False))
@click.argument("out_wav", required=False, type=click.Path(dir_okay=False))
@click.option("--url", default="ws://127.0.0.1:8080/v1", show_default=True, help="The edge's Realtime URL.")
@click.option("--api-key", default=None, help="Default: $VOICEMESH_API_KEY.")
def talk(in_wav: str, out_wav: str | None, url: str, api_key: str | None) -> None:
    """Speak IN.wav to an edge and save the spoken reply (OUT.wav)."""
    import openai

    from voicemesh.talk import talk as run_talk
    from wire.audio import CLIENT_RATE, pcm16_to_float, read_wav, resample, write_wav
    from wire.redact import redact_url

    key = api_key or (api_keys_from_env() or ("",))[0]
    if not key:
        fail("no API key: pass --api-key or set VOICEMESH_API_KEY (`voicemesh up` prints one)")
    samples, rate = read_wav(in_wav)
    progress(f"speaking {Path(in_wav).name} ({len(samples) / rate:.1f} s) to {redact_url(url)}")
    try:
        reply = asyncio.run(run_talk(url, key, resample(samples, rate, CLIENT_RATE)))
    except (openai.OpenAIError, OSError, TimeoutError) as exc:
        where = redact_url(url)
        fail(f"could not talk to the edge at {where}: {exc!r}; is `voicemesh edge serve` (or `up`) running?")
    errors = [e for e in reply.events if e.type == "error"]
    for e in errors:
        console.print(f"[red]edge error[/red] {e.error.code}: {e.error.message}")
    console.print(f"[bold]you said:[/bold]  {reply.transcript or '(no transcript)'}")
    console.print(f"[bold]reply:[/bold]     {reply.text.strip() or '(none)'}")
    console.print(f"[bold]served by:[/bold] {reply.region}   status: {reply.status}")
    ttfa = f"{reply.first_audio_s * 1000:.0f} ms" if reply.first_audio_s is not None else "n/a"
    console.print(f"[bold]time to first audio:[/bold] {ttfa} (from end of speech)")
    seconds = len(reply.audio) / 2 / CLIENT_RATE
    if out_wav:
        write_wav(out_wav, pcm16_to_float(bytes(reply.audio)), CLIENT_RATE)
        progress(f"saved {seconds:.1f} s of reply audio to {out_wav}")
    if not reply.audio:
        fail("the reply had no audio")


@bench.command("edge")
@click.option("--region-url", default=None, help="A running region for the relay comparison (default: skip).")
@click.option("--idle", "n_idle", default=1000, show_default=True, type=int, help="Idle sessions to open.")
@click.option(
    "--streams",
    "n_streams",
    default=600,
    show_default=True,
    type=int,
    help="Active audio streams: enough to saturate the edge's core, where its capacity shows.",
)
@click.option("--seconds", default=10.0, show_default=True, type=float, help="Length of the streams test.")
@click.option("--turns", "n_turns", default=5, show_default=True, type=int, help="Turns for the relay test.")
@click.option("--vad-model", default=None, help="Silero VAD ONNX file (default: the profile's).")
@vad_runtime_option
@profile_option
def bench_edge(
    region_url: str | None, n_idle: int, n_streams: int, seconds: float, n_turns: int, vad_model: str | None,
    vad_runtime: str, profile: str | None,
) -> None:  # fmt: skip
    """Idle sessions and memory, active streams per core with batched VAD, relay overhead per chunk."""
    from voicemesh.bench.edge import run_bench

    key = "bench-" + secrets.token_hex(8)
    # The bench reads /status: its one key is an admin key too.
    settings = edge_settings(
        profile=profile, api_keys=(key,), admin_keys=(key,), vad_model=vad_model, vad_runtime=vad_runtime
    )
    asyncio.run(
        run_bench(
            settings, region_url=region_url, n_idle=n_idle, n_streams=n_streams, seconds=seconds,
            n_turns=n_turns, report=progress, out=console.print,
        )
    )  # fmt: skip


@bench.command("edge-pair")
@click.argument("a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--streams", "n_streams", default=300, show_default=True, type=int,
    help="Streams into each edge: the two together should fill the core.",
)  # fmt: skip
@click.option(
    "--seconds", default=10.0, show_default=True, type=float, help="Length of each round's streams."
)
@click.option(
    "--rounds", default=4, show_default=True, type=int, help="Rounds (which edge starts first alternates)."
)
@vad_runtime_option
@profile_option
def bench_edge_pair(
    a: Path, b: Path, n_streams: int, seconds: float, rounds: int, vad_runtime: str, profile: str | None
) -> None:
    """Two checkouts' edges (source trees, run with this environment's packages) on one core at once:
    the ratio of their CPU per audio stream-second, measured in the same minutes."""
    from voicemesh.bench.edge_pair import bench_pair

    if rounds < 1 or n_streams < 1:
        fail("--rounds and --streams must be at least 1")
    for checkout in (a, b):
        if not (checkout / "edge" / "__init__.py").is_file():
            fail(f"{checkout} is not a voicemesh source tree (no edge/__init__.py): give two checkouts")
    key = "bench-" + secrets.token_hex(8)
    settings = edge_settings(profile=profile, api_keys=(key,), admin_keys=(key,), vad_runtime=vad_runtime)
    result = asyncio.run(
        bench_pair(
            settings, a.resolve(), b.resolve(), n=n_streams, seconds=seconds, rounds=rounds, report=progress,
            out=console.print,
        )
    )  # fmt: skip
    console.print(result.summary())
