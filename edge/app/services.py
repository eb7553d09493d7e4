"""What every session of an edge process shares: router, VAD, fallback voice, stores, limits.

The models come in behind ``edge.shared.protocols`` (and the router behind ``router.api.TurnRouter``):
``EdgeServices.build`` wires the real ones from settings, ``edge.testing.memory_services`` in-memory
stand-ins.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field, replace

from edge.audio.fallback_voice import FallbackVoice
from edge.audio.turn_model import TurnModelBatcher
from edge.audio.vad import VadBatcher
from edge.realtime.session_deps import SessionDeps
from edge.realtime.session_snapshot import SessionSnapshots
from edge.responses.recent_turns import RecentTurns
from edge.shared.limits import KeyLimits
from edge.shared.protocols import FallbackSpeaker, TurnModel, Vad
from edge.shared.settings import EdgeSettings
from edge.speech.custom_voices import VoiceLibrary, open_voice_store
from edge.speech.speech_cache import SpeechCache
from edge.speech.speech_deps import SpeechDeps
from edge.stores.base import EdgeStore
from edge.stores.memory import LocalStore
from edge.stores.redis.batches import BatchStore
from edge.stores.redis.limits import RedisLimits
from edge.stores.redis.sessions import RedisFallbackStore
from edge.tenancy.accounting import Accounting
from edge.tenancy.auth import Authenticator
from edge.tenancy.client_secrets import ClientSecrets
from edge.tenancy.key_record import open_key_store
from edge.tenancy.keys import KeyRing
from edge.tenancy.shared_limits import SharedKeyLimits
from router.api import TurnRouter
from wire.bounded_redis import BoundedRedis


def open_redis(settings: EdgeSettings) -> BoundedRedis | None:
    """The process's one Redis client (``settings.store_url``), for the edge's stores and the router's
    breakers alike; ``None`` without a store URL (everything in this process)."""
    if settings.store_url is None:
        return None
    # An item's audio (megabytes) goes in one call: more time than a session's small reads.
    return BoundedRedis(settings.store_url, timeout_s=settings.redis_timeout_s,
                        bulk_timeout_s=max(settings.redis_timeout_s, 5.0))  # fmt: skip


@dataclass
class EdgeServices:
    settings: EdgeSettings
    router: TurnRouter
    vad: Vad
    fallback: FallbackSpeaker
    turn_model: TurnModel | None
    """``semantic_vad``'s end of turn (Smart Turn, ``edge/audio/turn_model.py``)."""
    sessions: SessionSnapshots
    auth: Authenticator
    limits: SharedKeyLimits
    """Per key: open sessions and the connect bucket, across edges when Redis is configured."""
    mint_limits: KeyLimits
    """Per key: the bucket for minting client secrets, apart from connects."""
    store: EdgeStore
    voice_library: VoiceLibrary
    """Custom voices, shared by every edge (``edge/speech/custom_voices.py``)."""
    speech_cache: SpeechCache
    """Repeated speech requests, shared by every edge (``edge/speech/speech_cache.py``)."""
    accounting: Accounting = field(default_factory=Accounting)
    """Per key: the audit trail and usage totals (``edge/tenancy/accounting.py``)."""
    redis: BoundedRedis | None = None
    """The process's Redis client behind every shared store (closed with the services)."""
    batches: BatchStore | None = None
    """Speech batch jobs, in the shared Redis (``edge.stores.redis.batches.py``); ``None`` without one."""
    open_sessions: int = 0
    draining: bool = False
    """SIGTERM: new sessions are refused (503) while the open ones finish (``edge/app/server.py``)."""
    recent_turns: RecentTurns = field(default_factory=RecentTurns)
    """Every session's last responses, stages and failovers (``/status``, the ops page's waterfall)."""
    relay_times: list[float] | None = None
    _preload: asyncio.Task[None] | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls, settings: EdgeSettings, router: TurnRouter, *, redis: BoundedRedis | None = None
    ) -> EdgeServices:
        """The real thing: batched Silero VAD and Smart Turn, and Piper, from the settings' model paths."""
        vad = VadBatcher(settings.vad_model, runtime=settings.vad_runtime)
        fallback = FallbackVoice(settings.piper_model)
        turn_model = TurnModelBatcher(settings.turn_model) if settings.turn_model else None
        return cls.with_models(
            settings, router, vad=vad, fallback=fallback, redis=redis, turn_model=turn_model
        )

    @classmethod
    def with_models(
        cls, settings: EdgeSettings, router: TurnRouter, *, vad: Vad, fallback: FallbackSpeaker,
        redis: BoundedRedis | None = None, turn_model: TurnModel | None = None,
    ) -> EdgeServices:  # fmt: skip
        """Services around the given router, VAD and fallback voice; stores as the settings say, on
        ``redis`` (the process's client, from ``open_redis``; opened here when not given)."""
        if redis is None:
            redis = open_redis(settings)
        store: EdgeStore = LocalStore() if redis is None else RedisFallbackStore(redis)
        limits = settings.limits
        minting = replace(limits, connect_rate_per_s=limits.mint_rate_per_s, connect_burst=limits.mint_burst)
        return cls(
            settings=settings,
            router=router,
            vad=vad,
            fallback=fallback,
            turn_model=turn_model,
            sessions=SessionSnapshots(store, ttl_s=settings.resume.ttl_s),
            auth=Authenticator(
                settings,
                ClientSecrets(store, default_ttl_s=settings.client_secret_ttl_s),
                KeyRing(open_key_store(redis), settings.keys, settings.voices),
            ),
            limits=SharedKeyLimits(
                limits, None if redis is None else RedisLimits(redis), lease_s=settings.keys.session_lease_s
            ),
            mint_limits=KeyLimits(minting),
            store=store,
            voice_library=VoiceLibrary(open_voice_store(redis), settings.voices),
            speech_cache=SpeechCache(store, settings.speech_cache),
            accounting=Accounting.open(redis),
            redis=redis,
            batches=None if redis is None else BatchStore(redis, ttl_s=settings.batches.result_ttl_s),
        )

    def session_deps(self) -> SessionDeps:
        """What one Realtime session uses (``edge/realtime/session_deps.py``)."""
        return SessionDeps(
            settings=self.settings, router=self.router, vad=self.vad, fallback=self.fallback,
            turn_model=self.turn_model, snapshots=self.sessions, voices=self.voice_library,
            accounting=self.accounting,
            relay_times=self.relay_times, recent_turns=self.recent_turns,
        )  # fmt: skip

    def speech_deps(self) -> SpeechDeps:
        """What the speech service uses (``edge/speech/speech_deps.py``)."""
        return SpeechDeps(
            settings=self.settings, router=self.router, fallback=self.fallback, limits=self.limits,
            voices=self.voice_library, cache=self.speech_cache, accounting=self.accounting,
            batches=self.batches,
        )  # fmt: skip

    async def start(self) -> None:
        # Piper takes ~2 s to load: do it now, not during the first degraded turn.
        self._preload = asyncio.create_task(self.fallback.load())

    async def aclose(self) -> None:
        if self._preload is not None:
            self._preload.cancel()
            with contextlib.suppress(BaseException):
                await self._preload
        await self.vad.aclose()
        if self.turn_model is not None:
            await self.turn_model.aclose()
        await self.router.aclose()
        await self.auth.keys.aclose()
        await self.limits.aclose()
        await self.store.aclose()
        await self.voice_library.store.aclose()
        await self.accounting.aclose()
        if self.batches is not None:
            await self.batches.aclose()
        if self.redis is not None:
            await self.redis.aclose()  # last: every store above may still write on closing
