"""A turn with no user words (empty typed text, no audio: the edge's greeting, LiveKit's
``generate_reply(instructions=...)``) is answered from its instructions and history, with no STT and
no transcript; silence in a turn's audio still gets no answer.

Fast tier: stand-in models (``region.testing``): what is under test is the pipeline around them
(what the LLM is asked, which events come back), not the models.
"""

from __future__ import annotations

from region.testing import FixedTranscript, ScriptedLlm, run_frames, standin_node
from tests.region.helpers import SECOND, start
from wire.client import ClauseAudio
from wire.turn import AudioClause, Message, Transcript, TurnDone, TurnError


async def test_a_turn_without_user_words_is_answered_from_instructions_and_history() -> None:
    stt, llm = FixedTranscript(), ScriptedLlm("Hello! How can I help you today?")
    node = standin_node(stt=stt, llm=llm)
    history = [Message(role="user", content="Hi."), Message(role="assistant", content="Hello.")]
    frame = start("greet", text="", instructions="Greet the user.", history=history)
    sent = await run_frames(node, [frame], until=TurnDone)
    assert not [m for m in sent if isinstance(m, TurnError | Transcript)]
    (done,) = [m for m in sent if isinstance(m, TurnDone)]
    assert done.status == "completed" and done.text == "Hello! How can I help you today?"
    assert [m for m in sent if isinstance(m, AudioClause)], "the greeting was not spoken"
    ((asked, user_text),) = llm.requests
    assert (asked.instructions, asked.history, user_text) == ("Greet the user.", history, "")
    assert stt.calls == 0


async def test_silence_in_audio_still_gets_no_answer() -> None:
    llm = ScriptedLlm("Nobody asked.")
    node = standin_node(stt=FixedTranscript(""), llm=llm)
    sent = await run_frames(node, [start("quiet", audio_bytes=len(SECOND)), SECOND], until=TurnDone)
    assert [m.text for m in sent if isinstance(m, Transcript)] == [""]
    assert llm.requests == [] and not [m for m in sent if isinstance(m, ClauseAudio | AudioClause)]
