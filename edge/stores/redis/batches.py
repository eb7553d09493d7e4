"""Speech batch jobs in the shared Redis, worked by every edge: what survives an edge's restart.

One sorted set is the work queue of every edge (``queue``): its members are ``item:<job>:<n>`` (an
item to read aloud) and ``hook:<job>`` (a finished job's webhook to deliver), scored by the time
(ms) from which they may be claimed. Claiming one (``claim``, a Lua script) moves its score a lease
ahead: the worker heartbeats to keep it, and an edge killed mid-item simply stops heartbeating, so
once the lease passes any edge claims it again. An item or webhook leaves the queue only when it is
finished; a retry puts it back with a later score.

Per job: a hash (``job:<id>``: the job's fields, counters, webhook state), the items' requests
(``job:<id>:specs``), their states (``job:<id>:state``: ``queued``, ``running``, ``completed``,
``failed``, ``cancelled``), their results (``job:<id>:items``) and each item's audio
(``job:<id>:audio:<n>``). Finishing an item is one script: it is counted once however many workers
raced for it, and the one that finishes the job queues its webhook. Everything expires
``result_ttl_s`` after the job was made. A failed call raises one of ``wire.bounded_redis.FAILURES``
(the callers answer 503 or retry later): there are no batches without Redis.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import msgspec

from wire.bounded_redis import BoundedRedis
from wire.voices import CustomVoice

ItemState = Literal["queued", "running", "completed", "failed", "cancelled"]
FINAL: tuple[str, ...] = ("completed", "failed", "cancelled")


class ItemSpec(msgspec.Struct, kw_only=True, frozen=True):
    """One item's speech request, checked and resolved when the job was made."""

    input: str
    voice: str
    """What the client asked for: a built-in name, or a custom voice's name or id."""
    region_voice: str = ""
    custom_voice: CustomVoice | None = None
    """A custom voice's definition as it was when the job was made (kept with the job)."""
    response_format: str = "mp3"
    speed: float = 1.0


class ItemResult(msgspec.Struct, kw_only=True):
    status: str
    regions: list[str] = msgspec.field(default_factory=list)
    audio_bytes: int = 0
    cache: str = ""
    """``hit`` when the speech cache had it (no synthesis)."""
    error: dict[str, str] | None = None
    attempts: int = 0


class JobRecord(msgspec.Struct, kw_only=True, frozen=True):
    """A job's fixed fields."""

    id: str
    key_id: str
    created_at: int
    total: int
    residency: list[str] | None = None
    webhook_url: str = ""
    webhook_secret: str = ""
    metadata: dict[str, str] = msgspec.field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    kind: Literal["item", "hook"]
    job_id: str
    index: int
    member: str


# KEYS: queue. ARGV: now_ms, lease_ms. The first claimable member, its score moved a lease ahead.
_CLAIM = """
local m = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1)
if #m == 0 then return false end
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), m[1])
return m[1]
"""

# KEYS: state, job. ARGV: n, now_ms. 1: the item runs now; 0: it is final (cancelled meanwhile).
_START = """
local s = redis.call('HGET', KEYS[1], ARGV[1])
if s ~= 'queued' and s ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], 'running')
redis.call('HSETNX', KEYS[2], 'started_at', ARGV[2])
return 1
"""

# KEYS: state. ARGV: n. A running item is queued again (a retry, a hand-over); a final one stays.
_REQUEUE = """
if redis.call('HGET', KEYS[1], ARGV[1]) == 'running' then
  redis.call('HSET', KEYS[1], ARGV[1], 'queued')
end
return 1
"""

# KEYS: job, state, items, audio, queue. ARGV: n, member, outcome, result, audio, ttl_s, now_ms,
# job_id. -1: already final (nothing changed); 1: this finished the job (its webhook is queued);
# 0: otherwise.
_FINISH = """
local s = redis.call('HGET', KEYS[2], ARGV[1])
if s == 'completed' or s == 'failed' or s == 'cancelled' then
  redis.call('ZREM', KEYS[5], ARGV[2])
  return -1
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[4])
if ARGV[3] == 'completed' then
  redis.call('SET', KEYS[4], ARGV[5], 'EX', tonumber(ARGV[6]))
end
redis.call('ZREM', KEYS[5], ARGV[2])
redis.call('HINCRBY', KEYS[1], ARGV[3], 1)
local f = redis.call('HMGET', KEYS[1], 'total', 'completed', 'failed', 'cancelled')
local ended = (tonumber(f[2]) or 0) + (tonumber(f[3]) or 0) + (tonumber(f[4]) or 0)
if ended < tonumber(f[1]) then return 0 end
redis.call('HSET', KEYS[1], 'finished_at', ARGV[7])
if redis.call('HGET', KEYS[1], 'webhook_status') == 'waiting' then
  redis.call('HSET', KEYS[1], 'webhook_status', 'pending')
  redis.call('ZADD', KEYS[5], tonumber(ARGV[7]), 'hook:' .. ARGV[8])
end
return 1
"""


def _ms(t: float | None = None) -> int:
    return int((time.time() if t is None else t) * 1000)


class BatchStore:
    def __init__(self, redis: BoundedRedis, *, ttl_s: int, prefix: str = "voicemesh:batch:") -> None:
        # An item's audio (megabytes) goes in one call: the bulk pool's longer bound, not a session's.
        self._r = client = redis.bulk
        self._p = prefix
        self.ttl_s = ttl_s
        self._claim = client.register_script(_CLAIM)
        self._start = client.register_script(_START)
        self._finish = client.register_script(_FINISH)
        self._requeue = client.register_script(_REQUEUE)
        self._enc = msgspec.json.Encoder()

    @property
    def queue(self) -> str:
        return self._p + "queue"

    def _job(self, job_id: str) -> str:
        return f"{self._p}job:{job_id}"

    async def create(self, job: JobRecord, specs: list[ItemSpec]) -> None:
        key, now = self._job(job.id), _ms()
        fields: dict[str | bytes, bytes | float | int | str] = {
            "record": self._enc.encode(job), "total": job.total, "completed": 0, "failed": 0,
            "cancelled": 0, "webhook_status": "waiting" if job.webhook_url else "none",
            "webhook_attempts": 0,
        }  # fmt: skip
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping=fields)
            pipe.hset(key + ":specs", mapping={str(n): self._enc.encode(s) for n, s in enumerate(specs)})
            pipe.hset(key + ":state", mapping={str(n): "queued" for n in range(len(specs))})
            for suffix in ("", ":specs", ":state"):
                pipe.expire(key + suffix, self.ttl_s)
            pipe.zadd(self._p + f"key:{job.key_id}", {job.id: now})
            # The key's list outlives each job (refreshed by the next): drop the ids that expired.
            pipe.zremrangebyscore(self._p + f"key:{job.key_id}", "-inf", now - self.ttl_s * 1000)
            pipe.expire(self._p + f"key:{job.key_id}", self.ttl_s)
            # Items of one job in order, after every item already waiting: a millisecond apart, as
            # equal scores would order them by name (``item:j:10`` before ``item:j:2``).
            pipe.zadd(self.queue, {f"item:{job.id}:{n}": now + n for n in range(len(specs))})
            await pipe.execute()

    async def record(self, job_id: str) -> tuple[JobRecord, dict[str, str]] | None:
        raw = await self._r.hgetall(self._job(job_id))
        if not raw:
            return None
        fields = {k.decode(): v.decode() for k, v in raw.items() if k != b"record"}
        return msgspec.json.decode(raw[b"record"], type=JobRecord), fields

    async def states(self, job_id: str) -> dict[int, str]:
        raw = await self._r.hgetall(self._job(job_id) + ":state")
        return {int(k): v.decode() for k, v in raw.items()}

    async def results(self, job_id: str) -> dict[int, ItemResult]:
        raw = await self._r.hgetall(self._job(job_id) + ":items")
        return {int(k): msgspec.json.decode(v, type=ItemResult) for k, v in raw.items()}

    async def spec(self, job_id: str, index: int) -> ItemSpec | None:
        raw = await self._r.hget(self._job(job_id) + ":specs", str(index))
        return None if raw is None else msgspec.json.decode(raw, type=ItemSpec)

    async def audio(self, job_id: str, index: int) -> bytes | None:
        data: bytes | None = await self._r.get(f"{self._job(job_id)}:audio:{index}")
        return data

    async def jobs_of(self, key_id: str, limit: int) -> list[str]:
        ids = await self._r.zrevrange(self._p + f"key:{key_id}", 0, limit - 1)
        return [i.decode() for i in ids]

    async def queue_position(self, job_id: str, states: dict[int, str]) -> int | None:
        """1 + the queued work ahead of this job's first queued item; ``None`` with none queued."""
        queued = [f"item:{job_id}:{n}" for n, s in states.items() if s == "queued"]
        if not queued:
            return None
        found: list[float | None] = await self._r.zmscore(self.queue, queued)  # type: ignore[no-untyped-call]
        scores = [s for s in found if s is not None]
        if not scores:
            return None
        ahead: int = await self._r.zcount(self.queue, "-inf", f"({min(scores)}")
        return ahead + 1

    async def claim(self, lease_s: float) -> Claim | None:
        member = await self._claim(keys=[self.queue], args=[_ms(), int(lease_s * 1000)])
        if member is None:
            return None
        text = member.decode()
        kind, _, rest = text.partition(":")
        if kind == "hook":
            return Claim("hook", rest, -1, text)
        job_id, _, n = rest.rpartition(":")
        return Claim("item", job_id, int(n), text)

    async def heartbeat(self, claim: Claim, lease_s: float) -> None:
        await self._r.zadd(self.queue, {claim.member: _ms() + int(lease_s * 1000)}, xx=True)

    async def release(self, claim: Claim, after_s: float) -> None:
        """Back in the queue, claimable ``after_s`` from now (a retry, or a drain's hand-over)."""
        await self._r.zadd(self.queue, {claim.member: _ms() + int(after_s * 1000)}, xx=True)
        if claim.kind == "item":
            await self._start_over(claim)

    async def _start_over(self, claim: Claim) -> None:
        # One script: a cancel landing between a read and a write must not be turned back into queued.
        await self._requeue(keys=[self._job(claim.job_id) + ":state"], args=[str(claim.index)])

    async def start(self, claim: Claim) -> bool:
        """The item is running; ``False`` when it is already final (then it left the queue)."""
        started = await self._start(keys=[self._job(claim.job_id) + ":state", self._job(claim.job_id)],
                                    args=[str(claim.index), _ms()])  # fmt: skip
        if not started:
            await self._r.zrem(self.queue, claim.member)
        return bool(started)

    async def tried(self, claim: Claim) -> int:
        """Counts one more attempt of the item; returns the count."""
        n: int = await self._r.hincrby(self._job(claim.job_id) + ":tries", str(claim.index), 1)
        await self._r.expire(self._job(claim.job_id) + ":tries", self.ttl_s)
        return n

    async def finish(self, claim: Claim, result: ItemResult, audio: bytes = b"") -> int:
        """Ends the item (``result.status`` completed or failed): -1 already final, 1 the job is
        finished (its webhook, if any, is queued), 0 otherwise."""
        key = self._job(claim.job_id)
        keys = [key, key + ":state", key + ":items", f"{key}:audio:{claim.index}", self.queue]
        args: list[bytes | str | int] = [
            str(claim.index), claim.member, result.status, self._enc.encode(result), audio, self.ttl_s,
            _ms(), claim.job_id,
        ]  # fmt: skip
        outcome = int(await self._finish(keys=keys, args=args))
        await self._r.expire(key + ":items", self.ttl_s)
        return outcome

    async def cancel(self, job_id: str) -> int:
        """Every item not yet final is cancelled (a running one is read to its end, its result
        dropped); returns how many."""
        states = await self.states(job_id)
        n = 0
        for index, state in states.items():
            if state in FINAL:
                continue
            claim = Claim("item", job_id, index, f"item:{job_id}:{index}")
            if await self.finish(claim, ItemResult(status="cancelled")) != -1:
                n += 1
        return n

    async def webhook_tried(self, job_id: str, status: str, error: str = "", *, count: bool = True) -> int:
        """Notes a delivery (``count``) and the webhook's status; returns the deliveries so far."""
        key = self._job(job_id)
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, "webhook_attempts", 1 if count else 0)
            pipe.hset(key, mapping={"webhook_status": status, "webhook_error": error})
            attempts, _ = await pipe.execute()
        return int(attempts)

    async def done_with(self, claim: Claim) -> None:
        await self._r.zrem(self.queue, claim.member)

    async def aclose(self) -> None:
        pass  # the client is the process's (``wire.bounded_redis``): its owner closes it


__all__ = ["FINAL", "BatchStore", "Claim", "ItemResult", "ItemSpec", "ItemState", "JobRecord"]
