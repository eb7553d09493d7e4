"""``ScriptedRouter``: the router and its regions as a script of ``RoutedEvent``s per turn, and the
scripts' building blocks (a spoken, text-only, tool-calling or transcribe-only answer; a hold; a raise)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from edge.testing.audio import tone
from router.api import Routed, RoutedEvent, SessionRouting
from wire.client import ClauseAudio
from wire.text import split_sentences
from wire.turn import AudioClause, TextDelta, ToolCall, ToolCalls, Transcript, TurnDone, TurnStart


@dataclass
class Hold:
    """A step of a ``ScriptedRouter`` script: the turn waits here until ``release()`` (or until the
    edge closes the stream, as a barge-in does)."""

    _released: asyncio.Event = field(default_factory=asyncio.Event)
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a turn gets here: the test may act while the turn waits."""

    def release(self) -> None:
        self._released.set()

    async def wait(self) -> None:
        self.reached.set()
        await self._released.wait()


@dataclass
class Raise:
    """A step of a ``ScriptedRouter`` script: the router's stream raises ``error`` here (a router bug,
    or a router that raises instead of yielding its outcome)."""

    error: Exception


ScriptStep = RoutedEvent | Hold | Raise


@dataclass
class ScriptedTurn:
    """One turn the scripted router served: what the edge asked, and how the stream ended."""

    session: SessionRouting
    start: TurnStart
    audio: bytes | None
    closed_early: bool = False
    """The edge closed the stream before the script ended (a cancel or barge-in)."""


class ScriptedRouter:
    """A ``router.api.TurnRouter`` that yields a given list of ``RoutedEvent``s per turn.

    It stands in for the router and its regions (STT, LLM, TTS) where they are not what is under
    test: the edge's handling of their events is. Turn ``i`` gets ``scripts[i]`` (the last script
    is reused); ``turns`` records every call.
    """

    def __init__(self, *scripts: Sequence[ScriptStep]) -> None:
        if not scripts:
            raise ValueError("a ScriptedRouter needs at least one script")
        self._scripts = [list(s) for s in scripts]
        self.turns: list[ScriptedTurn] = []
        self.closed = False

    def run_turn(
        self, session: SessionRouting, start: TurnStart, audio: bytes | None = None
    ) -> AsyncIterator[RoutedEvent]:
        turn = ScriptedTurn(session, start, audio)
        script = self._scripts[min(len(self.turns), len(self._scripts) - 1)]
        self.turns.append(turn)
        return self._play(turn, script)

    async def _play(self, turn: ScriptedTurn, script: list[ScriptStep]) -> AsyncIterator[RoutedEvent]:
        done = 0  # steps the edge has had (closing at the last yield is not early)
        try:
            for step in script:
                if isinstance(step, Hold):
                    await step.wait()
                    done += 1
                elif isinstance(step, Raise):
                    done += 1
                    raise step.error
                else:
                    done += 1
                    yield step
        finally:
            turn.closed_early = done < len(script)

    def status(self) -> dict[str, object]:
        return {"regions": [], "scripted_turns": len(self.turns)}

    async def aclose(self) -> None:
        self.closed = True


def spoken_reply(text: str, *, region: str = "scripted", turn_id: str = "turn") -> list[RoutedEvent]:
    """A region's whole answer: routed, then per sentence its text and a tone as its audio, then done."""
    events: list[RoutedEvent] = [Routed(region=region)]
    for i, sentence in enumerate(split_sentences(text)):
        events.append(TextDelta(turn_id=turn_id, delta=sentence + " "))
        events.append(clause(sentence, index=i, turn_id=turn_id))
    events.append(TurnDone(turn_id=turn_id, region=region, status="completed", text=text))
    return events


def text_reply(*deltas: str, region: str = "scripted", turn_id: str = "turn") -> list[RoutedEvent]:
    """A region's text-only answer (``TurnStart.output_audio`` false): routed, the deltas, done."""
    events: list[RoutedEvent] = [Routed(region=region)]
    events += [TextDelta(turn_id=turn_id, delta=d) for d in deltas]
    events.append(TurnDone(turn_id=turn_id, region=region, status="completed", text="".join(deltas)))
    return events


def called(
    name: str, arguments: str = "{}", *, said: str = "", region: str = "scripted", turn_id: str = "turn"
) -> list[RoutedEvent]:
    """A region's answer that ends in a function call: routed, ``said`` spoken first (if any), the
    call (with the region's own id), done."""
    events: list[RoutedEvent] = [Routed(region=region)]
    for i, sentence in enumerate(split_sentences(said) if said else []):
        events += [
            TextDelta(turn_id=turn_id, delta=sentence + " "),
            clause(sentence, index=i, turn_id=turn_id),
        ]
    call = ToolCall(id=f"{region}-call", name=name, arguments=arguments)
    events.append(ToolCalls(turn_id=turn_id, calls=[call]))
    events.append(TurnDone(turn_id=turn_id, region=region, status="completed", text=said))
    return events


def heard(transcript: str, *, region: str = "scripted", turn_id: str = "turn") -> list[RoutedEvent]:
    """A region's transcribe-only turn (``TurnStart.transcribe_only``): routed, transcript, done."""
    return [
        Routed(region=region),
        Transcript(turn_id=turn_id, text=transcript),
        TurnDone(turn_id=turn_id, region=region, status="completed", transcript=transcript),
    ]


def clause(text: str, *, index: int = 0, seconds: float = 0.1, turn_id: str = "turn") -> ClauseAudio:
    """One clause's audio (a tone) as the router hands it over."""
    pcm = tone(seconds)
    return ClauseAudio(AudioClause(turn_id=turn_id, index=index, text=text, audio_bytes=len(pcm)), pcm)
