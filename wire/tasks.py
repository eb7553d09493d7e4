"""Stopping background tasks: cancel them all first, then wait for each to finish unwinding."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


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
