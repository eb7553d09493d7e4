"""Both profiles start vLLM with a tool-call parser, so ``tool_choice: "auto"`` can yield calls."""

from __future__ import annotations

from voicemesh.profiles import cpu_profile, gpu_profile


def test_both_profiles_start_vllm_with_the_hermes_tool_parser() -> None:
    for profile in (cpu_profile(), gpu_profile()):
        args = profile.llm.vllm_args
        assert "--enable-auto-tool-choice" in args, profile.name
        assert args[args.index("--tool-call-parser") + 1] == "hermes", profile.name
