"""A drill caller barges in (the chaos drill's callers do): a real edge (in-process uvicorn, real
Silero VAD, the stock openai client over a real socket) in front of a scripted stand-in region
(``router.testing``; no model is under test: the answer the caller talks over must still be
playing when it does, which a real region's short answer may not be).

The caller speaks its second utterance's successor as soon as the second answer's audio starts;
the edge hears speech over its answer and cancels it. That turn counts as barged in, not lost, and
none of the cancelled answer's audio or words leak into the next turn's record.
"""

from __future__ import annotations

from pathlib import Path

from router.testing import Admit, Done, Hang, Hear, ScriptedRegion, Step, speak
from tests.fixtures.edge import EdgeFactory
from voicemesh.drills.caller_state import CallerSettings, CallerState, EdgeTarget
from voicemesh.drills.callers import run_callers
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
