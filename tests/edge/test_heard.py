"""What was heard, kept once (``edge/turns/heard.py``) and read once (``edge/turns/reader.py``): the
transcript the client got is the history's text, even when a barge-in cuts the answer while the
region's later clauses already reached the edge.

Fast tier: a scripted router stands in for the router and its regions, energy VAD and a tone voice
for the models (``edge.testing``); the reader, the player's pacing and the history are the real ones.
"""

from __future__ import annotations

from typing import Any

from edge.tenancy.audit import TurnTrail
from edge.testing import Hold, ScriptedRouter, SessionHarness, clause, memory_services, spoken_reply, tone
from edge.turns.heard import Heard
from edge.turns.reader import TurnHandler, TurnReader
from router.api import ClientRefused, Degraded, FailedOver, Routed, RoutedEvent, SessionRouting
from wire.client import ClauseAudio
from wire.turn import TextDelta, Transcript, TurnStart


def _transcript(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")


async def test_after_a_barge_in_the_transcript_sent_is_the_history_text() -> None:
    hold = Hold()
    script: list[RoutedEvent | Hold] = [
        Routed(region="eu-west"),
        TextDelta(turn_id="t", delta="One. "),
        clause("One."),
        TextDelta(turn_id="t", delta="Two goes on and on. "),
        clause("Two goes on and on.", index=1, seconds=3.0),  # paced: far from sent at the barge-in
        TextDelta(turn_id="t", delta="Three. "),
        clause("Three.", index=2),
        hold,  # every clause above reached the edge; the region is still working
    ]
    router = ScriptedRouter(script, spoken_reply("Sure."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.turn_detection(type="server_vad", voicemesh_backchannel=False)  # a barge-in at once
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)  # "One." whole, "Two" begun
        await hold.reached.wait()  # "Three." and its audio are at the edge, not yet played
        await edge.append_audio(tone(0.3))  # the user talks over the answer
        await edge.wait_for("response.done")
        done = edge.of_type("response.done")[0]["response"]
        assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        sent = _transcript(edge.sent)
        history = [m.content for m in edge.state.history if m.role == "assistant"]
        assert sent == "One."  # not the clauses the region produced but the user never heard
        assert history == [sent]
        assert done["output"][0]["content"][0]["transcript"] == sent
        assert edge.of_type("response.output_audio_transcript.done")[0]["transcript"] == sent
        (item_done,) = [e for e in edge.of_type("conversation.item.done") if e["item"]["role"] == "assistant"]
        assert item_done["item"]["content"][0]["transcript"] == sent


async def test_a_clause_transcript_goes_out_after_its_audio_and_before_the_next_clause() -> None:
    router = ScriptedRouter(spoken_reply("One. Two. Three."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Count")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    kinds = [
        e["type"].removeprefix("response.output_audio")
        for e in edge.sent
        if e["type"] == "response.output_audio.delta"
        or (e["type"] == "response.output_audio_transcript.delta" and e["delta"].strip())
    ]
    # Each clause is one 100 ms audio delta: its words follow it, before the next clause's audio.
    assert kinds == [".delta", "_transcript.delta"] * 3
    assert _transcript(edge.sent).strip() == "One. Two. Three."
    assert [m.content for m in edge.state.history if m.role == "assistant"] == ["One. Two. Three."]


class _Seen(TurnHandler):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def got_routed(self, ev: Routed) -> None:
        self.seen.append(f"routed {ev.region}")

    async def got_clause(self, ev: ClauseAudio, piece: str) -> None:
        self.seen.append(f"clause {piece!r}")

    async def got_failover(self, ev: FailedOver) -> None:
        self.seen.append(f"failover {ev.from_region}")

    async def got_transcript(self, ev: Transcript) -> None:
        self.seen.append(f"transcript {ev.text}")

    async def got_refused(self, ev: ClientRefused) -> None:
        self.seen.append(f"refused {ev.code}")

    async def got_degraded(self, ev: Degraded) -> None:
        self.seen.append(f"degraded {ev.reason}")


async def _read(script: list[RoutedEvent], **kw: Any) -> tuple[TurnReader, _Seen, ScriptedRouter]:
    router = ScriptedRouter(script)
    stream = router.run_turn(SessionRouting(session_id="s"), TurnStart(turn_id="t", text="hi"))
    reader, seen = TurnReader(stream, **kw), _Seen()
    await reader.run(seen)
    return reader, seen, router


async def test_the_reader_keeps_regions_trail_and_heard_and_drops_a_failed_regions_unvoiced_text() -> None:
    degraded = Degraded(reason="no_region", unvoiced_text="Lost.", transcript="hi", failed_region="b")
    reader, seen, router = await _read(
        [
            Routed(region="a"),
            TextDelta(turn_id="t", delta="Kept. Lost "),
            clause("Kept."),
            FailedOver(from_region="a", to_region="b", reason="region_unavailable"),
            Routed(region="b", attempt=2),
            TextDelta(turn_id="t", delta="Also lost."),
            degraded,
            Routed(region="never-read"),  # after the ending: not read
        ]
    )
    assert seen.seen == ["routed a", "clause 'Kept.'", "failover a", "routed b", "degraded no_region"]
    assert reader.regions == ["a", "b"] and reader.region == "b"
    assert reader.trail.regions == ["a", "b"] and reader.trail.degraded == degraded
    assert [(h.from_region, h.to) for h in reader.trail.hops] == [("a", "b")]
    assert reader.heard.voiced == "Kept." and reader.heard.pending == ""
    assert router.turns[0].closed_early  # the stream is closed after the ending


async def test_a_key_that_wants_an_error_gets_the_refusal_after_the_users_transcript() -> None:
    refusal = ClientRefused(code="no_region_available", message="none", error_type="server_error")
    trail = TurnTrail()
    reader, seen, _ = await _read(
        [Routed(region="a"), Degraded(reason="no_region", transcript="hello")],
        trail=trail,
        refuse=lambda ev: refusal,
        turn_id="t",
    )
    assert seen.seen == ["routed a", "transcript hello", "refused no_region_available"]
    assert reader.trail is trail and trail.refused == refusal and trail.degraded is not None


def test_heard_pieces_truncate_and_unvoiced_rest() -> None:
    heard = Heard()
    heard.text("One. Two, three.")
    assert heard.clause("One.") == "One."
    assert heard.clause("Two,") == " Two,"
    assert heard.unvoiced_rest("One. Two, three. Four.") == "three. Four."
    heard.played(100)
    assert heard.sent("One.") == "One."
    heard.played(100)
    assert heard.sent("Two,") == " Two,"  # spaced from the piece before
    assert heard.heard_text == "One. Two,"
    assert heard.text_until(150) == "One."
    heard.truncate(150)
    assert (heard.heard_text, heard.sent_ms) == ("One.", 150)
