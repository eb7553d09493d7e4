"""Where breaker state lives: one base, one module per backend (litestar-stores style)."""

from router.breaker_storage.base import BreakerStorage
from router.breaker_storage.memory import MemoryBreakerStorage
from router.breaker_storage.redis import RedisBreakerStorage

__all__ = ["BreakerStorage", "MemoryBreakerStorage", "RedisBreakerStorage", "storage_from_url"]


def storage_from_url(
    redis_url: str | None, *, namespace: str = "voicemesh", timeout_s: float = 0.5
) -> BreakerStorage:
    """Redis when a URL is configured (state shared by every edge replica, each call bounded by
    ``timeout_s``, kept in this process while Redis is down), memory otherwise."""
    if redis_url:
        return RedisBreakerStorage(redis_url, namespace=namespace, timeout_s=timeout_s)
    return MemoryBreakerStorage()
