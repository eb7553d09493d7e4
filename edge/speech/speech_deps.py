"""What the speech service (``/v1/audio/*``, ``/v1/voices``, ``/v1/speech/batches`` and the batch
worker) uses of the edge, and nothing more: the composition root (``EdgeServices.speech_deps``) builds
it, and the routes get it through Litestar's dependency injection (``route_dependencies``).
"""

from __future__ import annotations

from dataclasses import dataclass

from edge.shared.protocols import FallbackSpeaker
from edge.shared.settings import EdgeSettings
from edge.speech.custom_voices import VoiceLibrary
from edge.speech.speech_cache import SpeechCache
from edge.stores.redis.batches import BatchStore
from edge.tenancy.accounting import Accounting
from edge.tenancy.shared_limits import SharedKeyLimits
from router.api import TurnRouter


@dataclass(frozen=True)
class SpeechDeps:
    settings: EdgeSettings
    router: TurnRouter
    fallback: FallbackSpeaker
    """The edge's own voice when no region can speak (``/v1/audio/speech`` only)."""
    limits: SharedKeyLimits
    """The key's rate bucket, the one new Realtime sessions use."""
    voices: VoiceLibrary
    cache: SpeechCache
    accounting: Accounting
    """Each request's audit record and usage."""
    batches: BatchStore | None = None
    """Speech batch jobs, in the shared Redis; ``None`` without one (the batch API answers 503)."""


__all__ = ["SpeechDeps"]
