"""Stopping background tasks: cancel them all first, then wait for each to finish unwinding."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def cancel_and_wait(
    *tasks: asyncio.Task[Any] | None, ignore: tuple[type[BaseException], ...] = ()
) -> None:
    """Cancel every task, then await each; their ``CancelledError`` (and ``ignore``) is swallowed.

    Cancelling all before awaiting any lets them unwind concurrently (a VAD loop and a prober, a
    writer and a speaker), and awaiting means nothing they hold outlives the caller's ``finally``.
    """
    live = [t for t in tasks if t is not None]
    for task in live:
        task.cancel()
    for task in live:
        with contextlib.suppress(asyncio.CancelledError, *ignore):
            await task


class Stopped(Exception):
    """``unless_stopped``'s work was abandoned because its stop event was set first."""


async def unless_stopped(work: Coroutine[Any, Any, T], stop: asyncio.Event) -> T:
    """Run ``work`` until it ends or ``stop`` is set; then it is cancelled and waited for, and
    ``Stopped`` raised (Ctrl-C on a long command: nothing it started outlives it)."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(stopper)
        if not task.done():
            await cancel_and_wait(task)
            raise Stopped
    return task.result()
