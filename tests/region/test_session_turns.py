"""Whole turns through a ``TurnSession`` on stand-in models (``region.testing``): what the region does
around its models (clause order, cancelling every stage, continuing after a failover, admission,
answering bad input), with real protocol frames and no model, vLLM or socket. Whether the models
hear and speak well is tested on a real region in ``test_turns.py``."""

from __future__ import annotations

import contextlib
from typing import TypeVar

import pytest

from region.settings import AdmissionSettings
from region.testing import FixedTranscript, Hold, ScriptedLlm, ToneTts, open_session, run_frames, standin_node
from tests.region.helpers import BAD_INPUT, SECOND, start
from wire.audio import REGION_OUT_RATE
from wire.errors import TurnInProgress, decode_error
from wire.turn import (
    AudioClause,
    RegionMessage,
    TextDelta,
    Transcript,
    TurnAdmitted,
    TurnCancel,
    TurnDone,
    TurnError,
    TurnQueued,
    TurnRejected,
    encode,
)

T = TypeVar("T")

REPLY = "Sunny and warm today, with a light breeze. Take a hat if you go out. Rain comes later."


def of(kind: type[T], sent: list[RegionMessage | bytes]) -> list[T]:
    return [m for m in sent if isinstance(m, kind)]


def done_of(sent: list[RegionMessage | bytes]) -> TurnDone:
    (done,) = of(TurnDone, sent)
    return done


async def test_a_turn_streams_text_then_clauses_in_order_each_with_its_audio() -> None:
    tts = ToneTts()
    node = standin_node(llm=ScriptedLlm(REPLY), tts=tts)
    sent = await run_frames(node, [start("t", text="Weather?")], until=TurnDone)

    assert isinstance(sent[0], TurnAdmitted) and isinstance(sent[1], Transcript)
    assert sent[1].text == "Weather?" and isinstance(sent[-1], TurnDone)
    assert "".join(d.delta for d in of(TextDelta, sent)) == REPLY
    clauses = of(AudioClause, sent)
    assert [c.index for c in clauses] == list(range(len(clauses))) and len(clauses) >= 3
    assert " ".join(c.text for c in clauses) == REPLY and tts.spoken == [c.text for c in clauses]
    for i, msg in enumerate(sent):
        if isinstance(msg, AudioClause):  # the header, then its audio frame, nothing between
            pcm = sent[i + 1]
            assert isinstance(pcm, bytes) and len(pcm) == msg.audio_bytes > 0
            assert msg.sample_rate == REGION_OUT_RATE and msg.turn_id == "t"
    done = done_of(sent)
    assert done.status == "completed" and done.text == REPLY and done.transcript == "Weather?"
    for stage in ("llm_ttft_s", "first_clause_s", "tts_first_audio_s", "first_audio_s", "llm_s", "total_s"):
        assert stage in done.timings, (stage, done.timings)
    assert "stt_s" not in done.timings  # typed text: no speech recognition
    assert node.admission.active == 0


async def test_speech_is_transcribed_and_the_transcript_is_answered() -> None:
    stt, llm = FixedTranscript("What should I wear?"), ScriptedLlm(REPLY)
    node = standin_node(stt=stt, llm=llm)
    sent = await run_frames(node, [start("s", audio_bytes=len(SECOND)), SECOND], until=TurnDone)
    assert of(Transcript, sent)[0].text == "What should I wear?" and stt.calls == 1
    assert [user_text for _, user_text in llm.requests] == ["What should I wear?"]
    done = done_of(sent)
    assert done.status == "completed" and "stt_s" in done.timings and done.text == REPLY


async def test_nothing_heard_gets_no_answer() -> None:
    llm = ScriptedLlm(REPLY)
    node = standin_node(stt=FixedTranscript(""), llm=llm)
    sent = await run_frames(node, [start("quiet", audio_bytes=len(SECOND)), SECOND], until=TurnDone)
    assert [type(m) for m in sent] == [TurnAdmitted, Transcript, TurnDone]
    assert done_of(sent).status == "completed" and llm.requests == []


async def test_a_failed_over_turn_skips_stt_and_continues_after_what_was_heard() -> None:
    heard = "Sunny and warm today, with a light breeze."
    stt, llm, tts = FixedTranscript(), ScriptedLlm(REPLY), ToneTts()
    node = standin_node(stt=stt, llm=llm, tts=tts)
    frame = start("f", transcript="Weather?", heard_text=heard)
    sent = await run_frames(node, [frame], until=TurnDone)

    assert stt.calls == 0 and of(Transcript, sent)[0].text == "Weather?"
    (asked,) = llm.requests
    assert asked[0].heard_text == heard and asked[1] == "Weather?"
    done = done_of(sent)
    assert done.status == "completed" and "stt_s" not in done.timings
    assert done.text == REPLY[len(heard) :] and not done.text.strip().startswith("Sunny")
    assert tts.spoken == ["Take a hat if you go out.", "Rain comes later."]  # nothing said twice


async def test_cancel_mid_answer_stops_every_stage_and_the_connection_goes_on() -> None:
    llm_hold, tts_hold = Hold(), Hold()
    llm = ScriptedLlm(REPLY, hold=llm_hold, hold_at=6)  # writing the answer...
    tts = ToneTts(hold=tts_hold)  # ...while speaking its first clause
    node = standin_node(llm=llm, tts=tts)
    async with open_session(node) as channel:
        channel.push(start("c", text="Weather?"))
        await llm_hold.reached.wait()
        await tts_hold.reached.wait()
        assert (llm.open_streams, tts.running, node.admission.active) == (1, 1, 1)

        channel.push(encode(TurnCancel(turn_id="c")))
        sent = await channel.wait_for(TurnDone)
        done = done_of(sent)
        assert done.status == "cancelled" and "cancel_s" in done.timings and "llm_s" not in done.timings
        assert (llm.open_streams, llm.aborted, tts.running) == (0, 1, 0)  # every stage stopped
        assert tts.spoken == [] and of(AudioClause, sent) == []
        assert done.text == "".join(d.delta for d in of(TextDelta, sent)) != ""
        assert node.admission.active == 0

        llm_hold.release()
        tts_hold.release()
        channel.push(start("next", text="And tomorrow?"))
        sent = await channel.wait_for(TurnDone, count=2)
    after = of(TurnDone, sent)[1]
    assert after.turn_id == "next" and after.status == "completed" and after.text == REPLY
    assert all(getattr(m, "turn_id", "next") == "next" for m in sent[sent.index(done) + 1 :])  # nothing of c


async def test_cancel_while_transcribing_stops_stt_and_nothing_is_asked_of_the_llm() -> None:
    hold = Hold()
    stt, llm = FixedTranscript(hold=hold), ScriptedLlm(REPLY)
    node = standin_node(stt=stt, llm=llm)
    async with open_session(node) as channel:
        channel.push(start("s", audio_bytes=len(SECOND)))
        channel.push(SECOND)
        await hold.reached.wait()
        channel.push(encode(TurnCancel(turn_id="s")))
        sent = await channel.wait_for(TurnDone)
    assert done_of(sent).status == "cancelled" and stt.running == 0 and llm.requests == []
    assert [type(m) for m in sent] == [TurnAdmitted, TurnDone]


async def test_a_dropped_connection_cancels_its_turn_and_frees_the_slot() -> None:
    hold = Hold()
    llm = ScriptedLlm(REPLY, hold=hold, hold_at=2)
    node = standin_node(llm=llm)
    async with open_session(node) as channel:
        channel.push(start("d", text="Weather?"))
        await hold.reached.wait()
    # leaving the block is the edge going away; the session has been awaited
    assert (llm.open_streams, llm.aborted, node.admission.active) == (0, 1, 0)
    assert not of(TurnDone, channel.sent)  # nobody is left to tell


async def test_beyond_capacity_a_turn_is_queued_with_its_position_then_the_next_is_busy() -> None:
    hold = Hold()
    node = standin_node(
        llm=ScriptedLlm(REPLY, hold=hold, hold_at=1),
        admission=AdmissionSettings(max_concurrent=1, max_queue=1),
    )
    async with contextlib.AsyncExitStack() as stack:
        a, b, c = [await stack.enter_async_context(open_session(node)) for _ in range(3)]
        a.push(start("a", text="Long story, please."))
        await hold.reached.wait()  # a holds the only slot

        b.push(start("b", text="Hi."))
        (queued,) = of(TurnQueued, await b.wait_for(TurnQueued))
        assert queued.position == 1 and queued.estimated_wait_s == node.admission.estimated_wait(1) > 0
        status, health = node.health()
        assert status == 200 and health["queue_depth"] == 1 and health["load"] == 2.0
        assert (health["active"], health["free_slots"]) == (1, 0)

        c.push(start("c", text="Hi."))
        (rejected,) = of(TurnRejected, await c.wait_for(TurnRejected))
        assert rejected.code == "busy" and rejected.retry_after_s == node.admission.estimated_wait(2) > 0
        assert "voicemesh_region_rejections_total 1.0" in node.metrics.render().decode()

        hold.release()  # a finishes; b moves from the queue into the slot
        assert done_of(await a.wait_for(TurnDone)).status == "completed"
        b_sent = await b.wait_for(TurnDone)
        assert [type(m) for m in b_sent[:2]] == [TurnQueued, TurnAdmitted]
        assert done_of(b_sent).status == "completed" and "queued_s" in done_of(b_sent).timings

        c.push(start("c2", text="Hi."))  # the refused connection is usable once there is room
        assert done_of((await c.wait_for(TurnDone))[1:]).status == "completed"
    assert (node.admission.active, node.admission.queued) == (0, 0)


async def test_a_queued_turn_that_disconnects_leaves_the_queue() -> None:
    hold = Hold()
    node = standin_node(
        llm=ScriptedLlm(REPLY, hold=hold, hold_at=1),
        admission=AdmissionSettings(max_concurrent=1, max_queue=1),
    )
    async with open_session(node) as a:
        a.push(start("a", text="Long story, please."))
        await hold.reached.wait()
        async with open_session(node) as b:
            b.push(start("b", text="Hi."))
            await b.wait_for(TurnQueued)
            assert node.admission.queued == 1
        assert node.admission.queued == 0 and node.admission.active == 1
        hold.release()
        assert done_of(await a.wait_for(TurnDone)).status == "completed"


async def test_a_second_turn_start_while_one_runs_is_refused() -> None:
    hold = Hold()
    node = standin_node(llm=ScriptedLlm(REPLY, hold=hold, hold_at=1))
    async with open_session(node) as channel:
        channel.push(start("one", text="Count to five."))
        await hold.reached.wait()
        channel.push(start("two", text="Hi."))
        (error,) = of(TurnError, await channel.wait_for(TurnError))
        assert (error.code, error.turn_id) == ("turn_in_progress", "two")
        # The sender's fault, by its declared class: a router never fails it over (`voicemesh fuzz`
        # found the code undeclared, which decode_error took for a region failure).
        assert isinstance(decode_error(error.code, error.message, region="r"), TurnInProgress)
        hold.release()
        sent = await channel.wait_for(TurnDone)
    assert [(d.turn_id, d.status) for d in of(TurnDone, sent)] == [("one", "completed")]


@pytest.mark.parametrize(("name", "frames", "code"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
async def test_bad_input_gets_an_error_and_the_connection_stays_usable(
    name: str, frames: list[str | bytes], code: str
) -> None:
    node = standin_node()
    async with open_session(node) as channel:
        for frame in frames:
            channel.push(frame)
        (error,) = of(TurnError, await channel.wait_for(TurnError))
        assert error.code == code and error.message, error
        channel.push(start("after", text="Say yes."))  # no stray event may be left from the bad turn
        sent = await channel.wait_for(TurnDone)
    assert sent[0] is error and isinstance(sent[1], TurnAdmitted)
    assert done_of(sent).status == "completed" and node.admission.active == 0
    assert f'voicemesh_region_request_errors_total{{code="{code}"}} 1.0' in node.metrics.render().decode()


async def test_every_bad_input_in_a_row_is_answered_in_order() -> None:
    node = standin_node()
    frames = [frame for _, case, _ in BAD_INPUT for frame in case]
    sent = await run_frames(node, frames, until=TurnError, count=len(BAD_INPUT))
    assert [e.code for e in of(TurnError, sent)] == [code for _, _, code in BAD_INPUT]
    assert len(sent) == len(BAD_INPUT)
