"""``voicemesh region serve`` and ``voicemesh bench region``."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import click

from region.settings import AdmissionSettings, AuthSettings, RegionSettings
from voicemesh.cli.common import bench, cli, fail, profile_option, progress, run_until_signal


@cli.group()
def region() -> None:
    """A regional node: STT -> LLM -> TTS behind the turn protocol."""


def region_settings(
    region_id: str,
    *,
    profile: str | None = None,
    host: str = "127.0.0.1",
    port: int = 9001,
    llm_url: str | None = None,
    max_concurrent: int | None = None,
    max_queue: int | None = None,
    max_batch: int | None = None,
    auth: AuthSettings | None = None,
) -> RegionSettings:
    """RegionSettings from a profile plus command-line overrides (also used by ``voicemesh up``)."""
    from voicemesh.profiles import load_profile

    p = load_profile(profile)
    defaults = AdmissionSettings()
    admission = AdmissionSettings(
        max_concurrent=max_concurrent if max_concurrent is not None else defaults.max_concurrent,
        max_queue=max_queue if max_queue is not None else defaults.max_queue,
        max_batch=max_batch if max_batch is not None else defaults.max_batch,
    )
    return RegionSettings(
        region_id=region_id, stt=p.stt, llm=replace(p.llm, url=llm_url), tts=p.tts, host=host, port=port,
        admission=admission, auth=auth or AuthSettings(),
    )  # fmt: skip


@region.command("serve")
@click.option("--id", "region_id", required=True, help="Region id, e.g. eu-west.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=9001, show_default=True, type=int)
@click.option(
    "--llm-url", default=None, help="Attach to this OpenAI-compatible vLLM (…/v1) instead of starting one."
)
@click.option("--llm-port", default=0, type=int, help="Port for the region's own vLLM (default: a free one).")
@profile_option
@click.option(
    "--max-concurrent",
    type=click.IntRange(min=1),
    envvar="VOICEMESH_REGION_MAX_CONCURRENT",
    default=None,
    help="Turns that run at once (default 4).",
)
@click.option(
    "--max-queue",
    type=click.IntRange(min=0),
    envvar="VOICEMESH_REGION_MAX_QUEUE",
    default=None,
    help="Turns that may wait for a slot (default 4).",
)
@click.option(
    "--max-batch", type=click.IntRange(min=0), default=None,
    help="Speech batch items read at once, only while no live turn runs (default 1; 0: none).",
)  # fmt: skip
@click.option(
    "--keys", "keys_path", envvar="VOICEMESH_REGION_KEYS", default=None, type=click.Path(dir_okay=False),
    help="Region key set (JSON, 0600): edges must present a token signed with one of its keys.",
)  # fmt: skip
@click.option(
    "--tls-cert", default=None, type=click.Path(exists=True, dir_okay=False), help="Serve https/wss."
)
@click.option(
    "--tls-key", default=None, type=click.Path(exists=True, dir_okay=False), help="Key of --tls-cert."
)
@click.option(
    "--insecure-no-auth",
    is_flag=True,
    help="Serve without authentication (anyone reaching the port runs turns).",
)
def serve(
    region_id: str, host: str, port: int, llm_url: str | None, llm_port: int, profile: str | None,
    max_concurrent: int | None, max_queue: int | None, max_batch: int | None, keys_path: str | None,
    tls_cert: str | None,
    tls_key: str | None, insecure_no_auth: bool,
) -> None:  # fmt: skip
    """Serve one region in the foreground until interrupted (with its own vLLM unless --llm-url)."""
    from voicemesh.local_region import serve_local_region

    if keys_path is None and not insecure_no_auth:
        fail(
            "a region needs its key set (--keys or VOICEMESH_REGION_KEYS; `voicemesh infra rotate-key` "
            "makes one), or --insecure-no-auth to let anyone who reaches the port run turns"
        )
    if (tls_cert is None) != (tls_key is None):
        fail("--tls-cert and --tls-key go together")
    auth = AuthSettings(keys_path=keys_path, tls_cert=tls_cert, tls_key=tls_key)
    try:
        settings = region_settings(
            region_id, profile=profile, host=host, port=port, llm_url=llm_url,
            max_concurrent=max_concurrent, max_queue=max_queue, max_batch=max_batch, auth=auth,
        )  # fmt: skip
    except ValueError as exc:
        fail(str(exc))

    async def main(stop: asyncio.Event) -> None:
        await serve_local_region(settings, stop=stop, report=progress, llm_port=llm_port)
        progress(f"region {region_id}: stopped")

    run_until_signal(main)


@bench.command("region")
@click.option(
    "--url", default=None, help="Attach to a running region (http://host:port); default: start one."
)
@click.option(
    "--llm-url", default=None, help="LLM for the region and the side-by-side run (default: start vLLM)."
)
@click.option("--turns", "n_turns", default=5, show_default=True, type=int, help="Turns per measurement.")
@click.option(
    "--utterance",
    default="Please tell me a short story about a cat.",
    show_default=True,
    help="What the espeak-ng speaker says each turn.",
)
@click.option("--max-output-tokens", default=60, show_default=True, type=int)
@click.option(
    "--cancels",
    "n_cancels",
    default=5,
    show_default=True,
    type=click.IntRange(min=0),
    help="Turns cancelled mid-answer, and as many mid-STT, to time the barge-in (0: skip).",
)
@click.option(
    "--lever", "levers", multiple=True, type=click.Choice(["priority", "first-chunk"]),
    help="Measure a latency lever on vs off, alternating (repeatable): priority = vLLM's niceness, "
    "first-chunk = a first audio chunk of a few words.",
)  # fmt: skip
@click.option("--lever-rounds", default=6, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--concurrency",
    multiple=True,
    type=click.IntRange(min=1),
    help="Concurrent turns per lever (default 1 and 2).",
)
@profile_option
def bench_region(
    url: str | None,
    llm_url: str | None,
    n_turns: int,
    utterance: str,
    max_output_tokens: int,
    n_cancels: int,
    levers: tuple[str, ...],
    lever_rounds: int,
    concurrency: tuple[int, ...],
    profile: str | None,
) -> None:
    """Per-stage p50/p95 over repeated turns, streaming vs naive time to first audio, cancel speed,
    and latency levers on vs off."""
    from voicemesh.bench.region import BenchOptions, run_bench
    from voicemesh.cli.common import console

    options = BenchOptions(
        url=url, turns=n_turns, utterance=utterance, max_output_tokens=max_output_tokens, cancels=n_cancels,
        levers=levers, lever_rounds=lever_rounds, concurrency=concurrency or (1, 2),
    )  # fmt: skip
    settings = region_settings("bench", profile=profile, llm_url=llm_url, port=0)

    async def main(stop: asyncio.Event) -> None:
        summary = await run_bench(options, settings, stop=stop, report=progress)
        console.print(summary, markup=False)

    run_until_signal(main)


@bench.command("traces")
@click.option("--llm-url", default=None, help="LLM for the region (default: start vLLM).")
@click.option(
    "--rounds", default=4, show_default=True, type=click.IntRange(min=1),
    help="Rounds of four turns, two with tracing off and two on (ABBA, then BAAB).",
)  # fmt: skip
@click.option(
    "--utterance", default="Please tell me a short story about a cat.", show_default=True,
    help="What the espeak-ng speaker says each turn.",
)  # fmt: skip
@profile_option
def bench_traces(llm_url: str | None, rounds: int, utterance: str, profile: str | None) -> None:
    """Tracing's cost on time to first audio: off vs on (to a loopback OTLP sink), in one run."""
    from voicemesh.bench.traces import bench_traces as run
    from voicemesh.cli.common import console

    settings = region_settings("bench", profile=profile, llm_url=llm_url, port=0)

    async def main(stop: asyncio.Event) -> None:
        console.print(await run(settings, rounds=rounds, utterance=utterance, report=progress), markup=False)

    run_until_signal(main)
