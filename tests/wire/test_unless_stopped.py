"""``unless_stopped``: a long command's work, abandoned (cancelled and waited for) when its stop
event is set first; its result otherwise."""

from __future__ import annotations

import asyncio

import pytest

from wire.tasks import Stopped, unless_stopped


async def test_the_result_when_the_work_ends_first() -> None:
    async def work() -> int:
        return 7

    assert await unless_stopped(work(), asyncio.Event()) == 7


def test_stop_cancels_the_work_and_waits_for_its_cleanup() -> None:
    # A loop of its own: the session's shared loop runs other tests' servers, whose tasks come
    # and go, so "no task left" is only exact here.
    asyncio.run(_stop_cancels_the_work_and_waits_for_its_cleanup())


async def _stop_cancels_the_work_and_waits_for_its_cleanup() -> None:
    stop, started, cleaned = asyncio.Event(), asyncio.Event(), []
    this = asyncio.current_task()

    async def work() -> int:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits: waited for, not left behind
            cleaned.append(True)
        return 0

    async def press_ctrl_c() -> None:
        await started.wait()
        stop.set()

    presser = asyncio.create_task(press_ctrl_c())
    with pytest.raises(Stopped):
        await unless_stopped(work(), stop)
    await presser
    assert cleaned == [True]
    assert asyncio.all_tasks() == {this}


async def test_an_error_in_the_work_reaches_the_caller() -> None:
    async def work() -> int:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        await unless_stopped(work(), asyncio.Event())
