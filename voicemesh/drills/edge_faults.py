"""The edge drills' faults: the edge serving a caller killed, every edge drained and restarted in
turn, the session store's Redis killed; callers resume their sessions on another edge."""

from __future__ import annotations

import asyncio

from voicemesh.drills.drill_context import DrillContext


async def crash_edge(ctx: DrillContext) -> None:
    fleet = ctx.fleet()
    rec = await ctx.moment()
    edge = await fleet.serving(rec.session_id) or fleet.edges[0]
    ctx.undo.push("edges", fleet.restore)
    killed = fleet.kill(edge)
    i = ctx.mark(
        "SIGKILL", edge.name, f"pids {killed} at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    await asyncio.sleep(ctx.params.hold_s)
    await fleet.restore()  # as its supervisor would (Kubernetes, `voicemesh up`)
    ctx.undo.pop("edges")
    ctx.end(i)


async def drain_edges(ctx: DrillContext) -> None:
    fleet = ctx.fleet()
    rec = await ctx.moment()
    ctx.undo.push("edges", fleet.restore)
    for edge in list(fleet.edges):  # a rolling restart: one edge at a time, each drained
        i = ctx.mark("SIGTERM", edge.name, f"drain and restart (caller {rec.caller} turn {rec.turn} playing)")
        code = await fleet.drain(edge)
        await fleet.start_edge(edge)
        ctx.end(i)
        ctx.report(f"{edge.name} drained (exit {code:g}) and started again")
    ctx.undo.pop("edges")


async def redis_down(ctx: DrillContext) -> None:
    fleet = ctx.fleet()
    rec = await ctx.moment()
    ctx.undo.push("edges", fleet.restore)
    await fleet.stop_redis()
    i = ctx.mark(
        "redis-down", "redis", f"SIGKILL at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    await asyncio.sleep(ctx.params.hold_s)
    await fleet.start_redis()
    ctx.end(i)
    # Resume works again once the edges copied their outage writes back (their store's retry_s):
    # the edge serving the next answer is killed, and its callers resume on the other one.
    await asyncio.sleep(3.0)
    try:
        nxt = await ctx.state.moments.wait(ctx.params.at_moment, timeout_s=ctx.params.moment_timeout_s)
    except TimeoutError:
        ctx.notes.append("no answer after Redis came back: resume after the outage was not exercised")
        ctx.undo.pop("edges")
        return
    edge = await fleet.serving(nxt.session_id) or fleet.edges[0]
    killed = fleet.kill(edge)
    j = ctx.mark(
        "SIGKILL", edge.name, f"after redis returned: pids {killed} at caller {nxt.caller} turn {nxt.turn}"
    )
    await asyncio.sleep(2.0)
    await fleet.restore()
    ctx.undo.pop("edges")
    ctx.end(j)
