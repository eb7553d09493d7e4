"""A region node: its models, admission, metrics and readiness, shared by every connection."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from region.admission import Admission
from region.llm import LlmClient, LlmError
from region.metrics import RegionMetrics
from region.pipeline import Stages, StreamingPipeline
from region.settings import RegionSettings
from region.stt import Transcriber
from region.tts import Synthesizer

log = logging.getLogger(__name__)

Report = Callable[[str], None]


class RegionNode:
    def __init__(self, settings: RegionSettings, llm_url: str, *, report: Report | None = None) -> None:
        self.settings = settings
        self.region = settings.region_id
        self._report = report or (lambda line: log.info("%s", line))
        self.stages = Stages(
            stt=Transcriber(settings.stt),
            llm=LlmClient(settings.llm, llm_url, system_prompt=settings.system_prompt),
            tts=Synthesizer(settings.tts),
        )
        self.pipeline = StreamingPipeline(self.stages)
        a = settings.admission
        self.admission = Admission(a.max_concurrent, a.max_queue, region=self.region)
        self.metrics = RegionMetrics(self.region, self.admission)
        self.failed: str | None = None

    @property
    def ready(self) -> bool:
        s = self.stages
        return s.stt.ready and s.tts.ready and s.llm.ready

    async def warm_up(self, llm_wait_s: float | None = None) -> None:
        """Load and warm every model, reporting each as it comes up. The LLM may still be starting
        (the CLI starts vLLM alongside): it is polled until ``llm_wait_s``."""
        try:
            for name, stage in (("STT", self.stages.stt), ("TTS", self.stages.tts)):
                t = time.perf_counter()
                await stage.load()
                self._report(f"region {self.region}: {name} warm ({time.perf_counter() - t:.1f} s)")
            await self._wait_for_llm(llm_wait_s or self.settings.llm.ready_timeout_s)
        except Exception as exc:
            self.failed = str(exc)
            raise

    async def _wait_for_llm(self, wait_s: float) -> None:
        t0 = time.perf_counter()
        said = False
        while True:
            try:
                await self.stages.llm.load()
                break
            except LlmError as exc:
                if time.perf_counter() - t0 > wait_s:
                    raise
                if not said:
                    self._report(
                        f"region {self.region}: waiting for the LLM at {self.stages.llm.url} ({exc.message})"
                    )
                    said = True
                await asyncio.sleep(1.0)
        self._report(
            f"region {self.region}: LLM warm at {self.stages.llm.url} ({time.perf_counter() - t0:.1f} s)"
        )

    def health(self) -> tuple[int, dict[str, Any]]:
        """(HTTP status, body): 200 only when every model is warm."""
        a = self.admission
        status = "ready" if self.ready else ("failed" if self.failed else "starting")
        body: dict[str, Any] = {
            "status": status,
            "region": self.region,
            "active": a.active,
            "capacity": a.capacity,
            "free_slots": a.free_slots,
            "queue_depth": a.queued,
            "queue_limit": a.queue_limit,
            "load": round((a.active + a.queued) / a.capacity, 3),
            "estimated_turn_s": round(a.turn_s, 2),
            "models": {
                "stt": self.stages.stt.ready,
                "llm": self.stages.llm.ready,
                "tts": self.stages.tts.ready,
            },
            "voices": sorted(self.stages.tts.voices),
            "llm_url": self.stages.llm.url,
        }
        if self.failed:
            body["error"] = self.failed
        return (200 if status == "ready" else 503), body

    async def aclose(self) -> None:
        await self.stages.llm.aclose()
