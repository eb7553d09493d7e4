"""Wait until a process answers (tenacity), or say clearly why it did not."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypedDict, Unpack

import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_fixed,
)

from infra.processes import is_alive
from voicemesh.processes.lifecycle import Process, log_tail
from wire.errors import VoicemeshError

Ready = Callable[[httpx.Response], bool]

_PROBE_TIMEOUT_S = 2.0


class ProcessStartError(VoicemeshError):
    """A process exited while starting, or did not become ready in time."""

    code = "process_start_failed"


class _NotReady(Exception):
    """One probe failed (its error is the cause); tenacity tries again until the deadline."""


class _Unhealthy(Exception):
    """A health URL did not answer, or not with 2xx (or ``ready`` said no)."""


def _exit_code(process: Process | None) -> int | None:
    """The exit code if ``process`` has ended (-1 when it is a pid we cannot reap), else None."""
    if process is None:
        return None
    if isinstance(process, int):
        return None if is_alive(process) else -1
    return process.poll()


class WaitOptions(TypedDict, total=False):
    """What every wait takes besides its deadline (see ``wait_for``)."""

    process: Process | None
    log_path: Path | None
    what: str
    hint: str
    interval_s: float


@dataclass
class _Watch:
    """One wait: the process to watch, where its log is, how to word a failure, when it began."""

    timeout_s: float
    process: Process | None = None
    log_path: Path | None = None
    what: str = "the process"
    hint: str = ""
    interval_s: float = 0.3
    t0: float = field(default_factory=time.monotonic)

    def retrying(self) -> dict[str, Any]:
        return {
            "stop": stop_after_delay(self.timeout_s),
            "wait": wait_fixed(self.interval_s),
            "retry": retry_if_exception_type(_NotReady),  # ProcessStartError (it died) is final
            "retry_error_callback": self._give_up,
        }

    @contextlib.contextmanager
    def attempt(self) -> Iterator[None]:
        """Around one probe: fail at once if the process has exited; any error = not ready yet."""
        self._check_exited()
        try:
            yield
        except Exception as exc:
            raise _NotReady() from exc

    def _check_exited(self) -> None:
        code = _exit_code(self.process)
        if code is not None:
            raise self._error(f"exited with code {code} while starting")

    def _give_up(self, state: RetryCallState) -> NoReturn:
        self._check_exited()  # it may have died during the last probe: that is the better message
        exc = state.outcome.exception() if state.outcome else None
        cause = exc.__cause__ if exc is not None and exc.__cause__ is not None else exc
        said = str(cause) if isinstance(cause, _Unhealthy) else f"{type(cause).__name__}: {cause}"
        raise self._error(f"was not ready within {self.timeout_s:.0f} s (last probe: {said})") from None

    def _error(self, problem: str) -> ProcessStartError:
        tail = log_tail(self.log_path)
        parts = [f"{self.what} {problem}"]
        if tail:
            parts.append(f"last lines of {self.log_path}:\n{tail}")
        # Without a log file there is nothing more to point at than the hint (or its own output).
        log = f"see {self.log_path} for the whole log" if self.log_path else "check its output"
        parts.append(self.hint or log)
        return ProcessStartError("\n".join(parts))


async def wait_for(
    probe: Callable[[], Awaitable[object]], *, timeout_s: float, **options: Unpack[WaitOptions]
) -> float:
    """Retry ``probe()`` until it returns without raising; the seconds it took.

    Raises ProcessStartError at once if ``process`` exits, or after ``timeout_s``; its message
    names ``what``, gives the last probe's error and the tail of ``log_path``, and ends with
    ``hint`` (what to do next). ``interval_s`` is the pause between probes.
    """
    watch = _Watch(timeout_s, **options)
    async for attempt in AsyncRetrying(**watch.retrying()):
        with attempt, watch.attempt():
            await probe()
    return time.monotonic() - watch.t0


def wait_for_sync(probe: Callable[[], object], *, timeout_s: float, **options: Unpack[WaitOptions]) -> float:
    """``wait_for`` for synchronous callers (pytest fixtures, click commands)."""
    watch = _Watch(timeout_s, **options)
    for attempt in Retrying(**watch.retrying()):
        with attempt, watch.attempt():
            probe()
    return time.monotonic() - watch.t0


def _judge(url: str, response: httpx.Response | httpx.HTTPError, ready: Ready | None) -> None:
    if isinstance(response, httpx.HTTPError):
        raise _Unhealthy(f"GET {url}: {type(response).__name__}: {response}") from response
    if not response.is_success:
        raise _Unhealthy(f"GET {url}: HTTP {response.status_code}")
    if ready is not None and not ready(response):
        raise _Unhealthy(f"GET {url}: answered but not ready: {response.text.strip()[:200]}")


async def wait_healthy(
    url: str, *, timeout_s: float, ready: Ready | None = None, **options: Unpack[WaitOptions]
) -> float:
    """Wait until GET ``url`` answers 2xx (and ``ready(response)`` if given); see ``wait_for``."""
    options.setdefault("what", url)
    async with httpx.AsyncClient(timeout=_PROBE_TIMEOUT_S) as client:

        async def probe() -> None:
            try:
                response: httpx.Response | httpx.HTTPError = await client.get(url)
            except httpx.HTTPError as exc:
                response = exc
            _judge(url, response, ready)

        return await wait_for(probe, timeout_s=timeout_s, **options)


def wait_healthy_sync(
    url: str, *, timeout_s: float, ready: Ready | None = None, **options: Unpack[WaitOptions]
) -> float:
    """``wait_healthy`` for synchronous callers (pytest fixtures, click commands)."""
    options.setdefault("what", url)
    with httpx.Client(timeout=_PROBE_TIMEOUT_S) as client:

        def probe() -> None:
            try:
                response: httpx.Response | httpx.HTTPError = client.get(url)
            except httpx.HTTPError as exc:
                response = exc
            _judge(url, response, ready)

        return wait_for_sync(probe, timeout_s=timeout_s, **options)
