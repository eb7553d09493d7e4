"""A region node: its models, admission, metrics and readiness, shared by every connection.

The models come in as ``Stages`` (``region.protocols``): ``RegionNode.from_settings`` builds the real
ones, tests may give in-memory stand-ins (``region.testing``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_delay, wait_fixed

from region.admission import Admission
from region.backends import build_stages
from region.llm_watch import LlmWatch
from region.metrics import RegionMetrics
from region.protocols import LlmError
from region.settings import RegionSettings
from region.streaming import StreamingPipeline
from region.turn_state import Stages

log = logging.getLogger(__name__)

Report = Callable[[str], None]


class RegionNode:
    def __init__(self, settings: RegionSettings, stages: Stages, *, report: Report | None = None) -> None:
        self.settings = settings
        self.region = settings.region_id
        self._report = report or (lambda line: log.info("%s", line))
        self.stages = stages
        self.pipeline = StreamingPipeline(self.stages)
        a = settings.admission
        self.admission = Admission(a.max_concurrent, a.max_queue, region=self.region, max_batch=a.max_batch)
        self.metrics = RegionMetrics(self.region, self.admission)
        self.failed: str | None = None
        llm = settings.llm
        self.llm_watch = LlmWatch(
            stages.llm, interval_s=llm.watch_interval_s, misses=llm.watch_misses, region=self.region,
            report=self._report,
        )  # fmt: skip
        """Started once warm (``watch_llm``): the LLM's death makes the region not ready."""

    @classmethod
    def from_settings(
        cls, settings: RegionSettings, llm_url: str, *, report: Report | None = None
    ) -> RegionNode:
        """A node on the real models (faster-whisper, vLLM at ``llm_url``, Kokoro), not yet warm."""
        return cls(settings, build_stages(settings, llm_url), report=report)

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
        llm = self.stages.llm

        def waiting(state: RetryCallState) -> None:
            if state.attempt_number == 1 and state.outcome is not None:  # say so once, not every second
                exc = state.outcome.exception()
                detail = exc.message if isinstance(exc, LlmError) else repr(exc)
                self._report(f"region {self.region}: waiting for the LLM at {llm.url} ({detail})")

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(LlmError), stop=stop_after_delay(wait_s), wait=wait_fixed(1.0),
            before_sleep=waiting, reraise=True,
        )  # fmt: skip
        async for attempt in retrying:
            with attempt:
                await llm.load()
        self._report(f"region {self.region}: LLM warm at {llm.url} ({time.perf_counter() - t0:.1f} s)")

    async def watch_llm(self) -> None:
        """Once warm: watch the LLM until cancelled (``region.llm_watch``)."""
        await self.llm_watch.run()

    def health(self) -> tuple[int, dict[str, Any]]:
        """(HTTP status, body): 200 only when every model is warm and the LLM answers."""
        a = self.admission
        status = "ready" if self.ready else ("failed" if self.failed else "starting")
        if status == "ready" and self.llm_watch.down is not None:
            status = "llm_down"
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
            "batch": {"running": a.live_first.batch, "max": a.live_first.max_batch},
            "running": self.stages.workload.counts(),
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
        elif status == "llm_down":
            body["error"] = f"the LLM does not answer: {self.llm_watch.down}"
            body["models"]["llm"] = False
        return (200 if status == "ready" else 503), body

    async def aclose(self) -> None:
        await self.stages.llm.aclose()
