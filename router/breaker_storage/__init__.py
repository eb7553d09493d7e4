"""Where breaker state lives: one base, one module per backend (litestar-stores style)."""

from router.breaker_storage.base import BreakerStorage
from router.breaker_storage.memory import MemoryBreakerStorage
from router.breaker_storage.redis import RedisBreakerStorage
from wire.bounded_redis import BoundedRedis

__all__ = ["BreakerStorage", "MemoryBreakerStorage", "RedisBreakerStorage", "storage_from_url"]


def storage_from_url(
    redis_url: str | None, *, namespace: str = "voicemesh", timeout_s: float = 0.5,
    redis: BoundedRedis | None = None,
) -> BreakerStorage:  # fmt: skip
    """Redis when a URL is configured (state shared by every edge replica, each call bounded by
    ``timeout_s``, kept in this process while Redis is down), memory otherwise. ``redis``: the
    process's client for that URL (shared with the edge's stores), else the router opens its own."""
    if redis_url:
        use = redis if redis is not None and redis.url == redis_url else redis_url
        return RedisBreakerStorage(use, namespace=namespace, timeout_s=timeout_s)
    return MemoryBreakerStorage()
