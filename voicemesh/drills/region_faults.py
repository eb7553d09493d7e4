"""The region drills' faults: a region killed, hung, slowed or flapping, every region down, more
callers than capacity. Each fires at the moment of a turn, lasts ``hold_s`` and is undone."""

from __future__ import annotations

import asyncio

from voicemesh.drills.drill_context import DrillContext
from voicemesh.drills.faults import hang, resume
from voicemesh.processes import kill_tree


async def crash_region(ctx: DrillContext) -> None:
    rec, region = await ctx.serving_target()
    killed = kill_tree(ctx.deployment.pid(region))
    i = ctx.mark(
        "SIGKILL", region.id, f"pids {killed} at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    ctx.undo.push("restore", lambda: ctx.deployment.restore(ctx.report))
    await asyncio.sleep(ctx.params.hold_s)
    ctx.undo.pop("restore")
    await ctx.deployment.restore(ctx.report)
    ctx.end(i)


async def hang_region(ctx: DrillContext) -> None:
    rec, region = await ctx.serving_target()
    pid = ctx.deployment.pid(region)

    async def undo_hang() -> None:
        resume(pid)

    hang(pid)
    ctx.undo.push("sigcont", undo_hang)
    i = ctx.mark(
        "SIGSTOP", region.id, f"pid {pid} at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    try:
        await asyncio.sleep(ctx.params.hold_s)
    finally:
        resume(pid)
        ctx.undo.pop("sigcont")
    ctx.end(i)


async def slow_region(ctx: DrillContext) -> None:
    region = await ctx.busiest(await ctx.moment())  # (it lasts: the next answers meet it anyway)
    proxy = ctx.proxies[region.id]

    async def fast() -> None:
        proxy.latency_s = 0.0

    proxy.latency_s = ctx.params.latency_s
    ctx.undo.push("latency", fast)
    i = ctx.mark("latency", region.id, f"+{ctx.params.latency_s * 1000:.0f} ms each way")
    await asyncio.sleep(ctx.params.hold_s)
    await fast()
    ctx.undo.pop("latency")
    ctx.end(i)


async def flap_region(ctx: DrillContext) -> None:
    region = await ctx.busiest(await ctx.moment())  # (it lasts: the next answers meet it anyway)
    proxy = ctx.proxies[region.id]
    ctx.undo.push("proxy-up", proxy.up)
    for n in range(ctx.params.flaps):
        cut = await proxy.down()
        i = ctx.mark("down", region.id, f"flap {n + 1}/{ctx.params.flaps}: refused, {cut} connections cut")
        await asyncio.sleep(ctx.params.down_s)
        await proxy.up()
        ctx.end(i)
        await asyncio.sleep(ctx.params.up_s)
    ctx.undo.pop("proxy-up")


async def all_regions_down(ctx: DrillContext) -> None:
    rec = await ctx.moment()

    async def all_up() -> None:
        for proxy in ctx.proxies.values():
            await proxy.up()

    ctx.undo.push("all-up", all_up)
    cut = sum([await p.down() for p in ctx.proxies.values()])
    i = ctx.mark(
        "all-down",
        "all",
        f"every region refused, {cut} connections cut (caller {rec.caller} turn {rec.turn})",
    )
    await asyncio.sleep(ctx.params.hold_s)
    await all_up()
    ctx.undo.pop("all-up")
    ctx.end(i)


async def saturate_regions(ctx: DrillContext) -> None:
    # The load is the fault: it starts with the callers and lasts the whole drill (no end mark).
    capacity = sum(r.capacity for r in ctx.regions)
    ctx.mark("saturation", "all", f"callers above the {capacity} slots of {len(ctx.regions)} regions")
