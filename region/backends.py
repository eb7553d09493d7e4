"""The real models of a region, built from its settings: the one place that names them.

A backend is added by writing a class that meets its Protocol in ``region.protocols`` and building
it here (from a new field of ``RegionSettings`` if it needs one); nothing else changes.
"""

from __future__ import annotations

from functools import partial

from region.cpu_order import CpuOrder
from region.end_of_turn import VllmEndOfTurn
from region.llm import VllmClient
from region.settings import RegionSettings
from region.stt import Transcriber
from region.tts import Synthesizer
from region.turn_state import Stages
from region.workload import Workload
from wire.text import ClauseChunker


def build_stages(settings: RegionSettings, llm_url: str) -> Stages:
    """faster-whisper, vLLM at ``llm_url`` and Kokoro, not loaded yet (``RegionNode.warm_up`` loads them)."""
    work = Workload()  # shared: Kokoro takes more threads only while nothing else runs
    llm = VllmClient(settings.llm, llm_url, system_prompt=settings.system_prompt, workload=work)
    return Stages(
        stt=Transcriber(settings.stt, work),
        llm=llm,
        tts=Synthesizer(settings.tts, work),
        chunker=partial(
            ClauseChunker,
            first_words=settings.tts.first_chunk_words,
            later_words=settings.tts.later_chunk_words,
        ),
        first_leg_tokens=settings.llm.first_leg_tokens,
        first_audio_hold_s=settings.tts.first_audio_hold_s,
        workload=work,
        order=CpuOrder(settings.model_runs),
        end_of_turn=VllmEndOfTurn(llm),
    )
