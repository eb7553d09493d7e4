"""What a profile is: the tiers' own settings for one set of models, and the files it reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge.shared.settings import ContentLimits
from edge.shared.voices import CPU_VOICES, VoiceTable
from region.settings import LlmSettings, SttSettings, TtsSettings


@dataclass(frozen=True)
class EdgeModels:
    piper_model: str
    vad_model: str
    turn_model: str = ""


@dataclass(frozen=True)
class Profile:
    name: str
    stt: SttSettings
    llm: LlmSettings
    tts: TtsSettings
    edge: EdgeModels
    description: str
    voices: VoiceTable = CPU_VOICES
    """The voices its regions speak (its Kokoro voice file) and the OpenAI names mapped to them:
    the edge's ``EdgeSettings.voices``."""

    @property
    def context_tokens(self) -> int:
        """The served model's context (vLLM's ``--max-model-len``): the edge fits each turn in it."""
        args = list(self.llm.vllm_args)
        if "--max-model-len" in args[:-1]:
            return int(args[args.index("--max-model-len") + 1])
        return ContentLimits().context_tokens

    def model_names(self) -> dict[str, str]:
        """The models by kind as ``GET /v1/models`` names them: the LLM's served name, the STT and
        TTS models' directory or file names (or ids)."""
        tts = Path(self.tts.model)
        return {
            "llm": self.llm.served_name,
            "stt": Path(self.stt.model).name,
            "tts": tts.parent.name if tts.suffix == ".onnx" else tts.name,
        }

    def local_paths(self) -> list[Path]:
        """Model files this profile reads from disk (ids resolved by their libraries are skipped)."""
        candidates = [
            self.stt.model,
            self.tts.model,
            self.tts.voices,
            self.edge.piper_model,
            self.edge.vad_model,
            self.edge.turn_model,
        ]
        return [Path(c) for c in candidates if c.startswith("/")]
