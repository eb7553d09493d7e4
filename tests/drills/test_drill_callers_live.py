"""A drill caller barges in (the chaos drill's callers do), and a drill is interrupted (Ctrl-C):
against a real edge (in-process uvicorn, real Silero VAD, the stock openai client over a real
socket) in front of a scripted stand-in region (``router.testing``; no model is under test: the
answer the caller talks over must still be playing when it does, which a real region's short answer
may not be).

The caller speaks its second utterance's successor as soon as the second answer's audio starts;
the edge hears speech over its answer and cancels it. That turn counts as barged in, not lost, and
none of the cancelled answer's audio or words leak into the next turn's record.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from router.testing import Admit, Done, Hang, Hear, ScriptedRegion, Step, answer, speak
from tests.fixtures.edge import EdgeFactory
from voicemesh.drills.caller_state import CallerSettings, CallerState, EdgeTarget
from voicemesh.drills.callers import run_callers
from voicemesh.drills.deployment import Deployment
from voicemesh.drills.drill_context import DrillContext, FaultParams
from voicemesh.drills.runner import run_drill
from voicemesh.drills.scenarios import Scenario
from voicemesh.drills.slo import Slo
from voicemesh.drills.speech import corpus
from wire.turn import TurnStart


async def test_a_caller_barges_into_a_playing_answer_and_no_turn_is_lost(
    edge_factory: EdgeFactory, tmp_path: Path
) -> None:
    starts: list[TurnStart] = []

    def script(start: TurnStart) -> list[Step]:
        starts.append(start)
        if len(starts) == 2:  # the answer the caller talks over: it would go on until cancelled
            return [Admit(), Hear(), *speak("This answer goes on and on"), Hang()]
        return [Admit(), Hear(), *speak(f"Answer number {len(starts)}."), Done()]

    async with ScriptedRegion("scripted", script) as region:
        edge = await edge_factory([region.record()])
        state = CallerState()
        settings = CallerSettings(turns=3, turn_timeout_s=60, barge_in_every=2)
        utterances = await corpus(tmp_path / "speech")
        await run_callers(EdgeTarget(edge.http_url, edge.api_key), utterances, 1, settings, state)

    records = sorted(state.records, key=lambda r: r.turn)
    assert [r.status for r in records] == ["completed", "barged_in", "completed"], [
        (r.status, r.error) for r in records
    ]
    assert [r.lost for r in records] == [False, False, False]
    assert records[1].first_audio is not None and records[1].barged_in
    assert len(region.cancels) == 1 and region.cancels[0] == starts[1].turn_id  # the edge cancelled it
    # The third turn's record holds its own answer only: nothing of the cancelled one.
    assert records[2].reply.strip() == "Answer number 3.", records[2].reply
    assert records[2].first_audio is not None and records[2].first_audio > records[2].speech_end


async def test_an_interrupted_drill_undoes_its_fault_and_returns_a_partial_report(
    edge_factory: EdgeFactory, tmp_path: Path
) -> None:
    """Ctrl-C (the drill's task cancelled, as ``asyncio.run`` does on SIGINT) mid-fault: the fault's
    undo runs, and the drill returns what it has, marked interrupted, for the report."""
    fired, undone = asyncio.Event(), []

    async def fault(ctx: DrillContext) -> None:
        await ctx.moment()

        async def undo() -> None:
            undone.append("undone")

        ctx.undo.push("test-undo", undo)
        ctx.mark("test-fault", "scripted")
        fired.set()
        await asyncio.Event().wait()  # holds until cancelled

    async with ScriptedRegion("scripted", answer("Fine, thanks.")) as region:
        edge = await edge_factory([region.record()])
        registry = tmp_path / "registry.json"
        registry.write_text(json.dumps({"regions": [{"id": "scripted", "url": region.url}]}))
        drill = asyncio.create_task(
            run_drill(
                Scenario("interrupted", "a fault held until Ctrl-C", fault),
                Deployment(EdgeTarget(edge.http_url, edge.api_key), registry),
                callers=1,
                caller_settings=CallerSettings(turns=40, turn_timeout_s=60),
                params=FaultParams(at_turn=1),
                slo=Slo(),
                speech_dir=tmp_path / "speech",
                report=print,
            )
        )
        await asyncio.wait_for(fired.wait(), 120)
        drill.cancel()
        result = await asyncio.wait_for(drill, 60)

    assert undone == ["undone"]
    assert [f.kind for f in result.faults] == ["test-fault"]
    assert any(n.startswith("interrupted at ") for n in result.notes), result.notes
    verdicts = {v.name: v for v in result.verdicts}
    assert not verdicts["completed"].passed and verdicts["completed"].measured == "interrupted (Ctrl-C)"
    assert not result.passed and result.records  # the turns so far are in the partial report
