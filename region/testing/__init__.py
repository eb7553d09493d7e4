"""Drive a ``TurnSession`` with real protocol frames and no socket (in the spirit of pipecat's
``run_test``): push the frames an edge would send, get back every frame the region sent, decoded
(``region.testing.frames``).

    node = standin_node(llm=ScriptedLlm("Hello there. How are you?"))
    out = await run_frames(node, [encode(TurnStart(turn_id="t", text="Hi"))], until=TurnDone)

The stand-in models (``region.testing.models``: ``FixedTranscript``, ``ScriptedLlm``, ``ToneTts``,
``ThreadedTts``) are for tests of what the region does *around* its models: the protocol, admission,
clause order, cancelling. Tests of what a model hears or says use the real ones
(``RegionNode.from_settings`` and a warm-up).
"""

from region.testing.frames import MemoryChannel, open_session, run_frames, standin_node
from region.testing.models import TOKEN, FixedTranscript, Hold, ScriptedLlm, ThreadedTts, ToneTts

__all__ = [
    "TOKEN",
    "FixedTranscript",
    "Hold",
    "MemoryChannel",
    "ScriptedLlm",
    "ThreadedTts",
    "ToneTts",
    "open_session",
    "run_frames",
    "standin_node",
]
