"""Drive a real ``RealtimeSession`` with real client event JSON and no socket (in the spirit of
pipecat's ``run_test`` and ``region/testing.py``): send what a client sends, get back every server
event the session sent, decoded.

    services = memory_services(ScriptedRouter(spoken_reply("Hi there.")))
    async with SessionHarness(services) as edge:
        await edge.send({"type": "conversation.item.create", "item": {...}})
        await edge.send({"type": "response.create"})
        events = await edge.wait_for("response.done")

The stand-ins below replace models where a model is not what is under test; everything between
them (session, conversation, VAD turn logic, response relay, pacing, framing) is the real code.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edge.app.services import EdgeServices
from edge.realtime.session import RealtimeSession
from edge.realtime.session_update import initial_state
from edge.shared.events import new_id
from edge.shared.protocols import RATE, ChunkSource, FallbackSpeaker, SpeechProbability, Vad
from edge.shared.settings import EdgeSettings
from edge.shared.state import SessionState
from router.api import Routed, RoutedEvent, SessionRouting, TurnRouter
from wire.audio import CLIENT_RATE, float_to_pcm16
from wire.client import ClauseAudio
from wire.text import split_sentences
from wire.turn import AudioClause, TextDelta, ToolCall, ToolCalls, Transcript, TurnDone, TurnStart

# -- stand-ins ---------------------------------------------------------------------------------------


def tone(seconds: float, *, hz: float = 440.0, amplitude: float = 0.3) -> bytes:
    """A sine at the client rate (24 kHz PCM16): loud enough for ``EnergyVad`` to call it speech."""
    t = np.arange(int(seconds * CLIENT_RATE), dtype=np.float32) / CLIENT_RATE
    return float_to_pcm16((amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32))


def silence(seconds: float) -> bytes:
    """Silence at the client rate (24 kHz PCM16)."""
    return bytes(2 * int(seconds * CLIENT_RATE))


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


class EnergyStream:
    """One session's stream of ``EnergyVad``."""

    def __init__(self, vad: EnergyVad) -> None:
        self._vad = vad

    def push(self, source: ChunkSource) -> None:
        self._vad.chunks += 1
        chunk = source.next_chunk()
        rms = float(np.sqrt(np.mean(np.square(chunk)))) if len(chunk) else 0.0
        asyncio.get_running_loop().call_soon(source.heard, 1.0 if rms >= self._vad.threshold else 0.0)


class EnergyVad:
    """A ``Vad`` that calls a chunk speech when its RMS reaches ``threshold`` (probability 1, else 0).

    It stands in for Silero where the VAD model is not what is under test (turn logic, barge-in,
    commits are): ``tone()`` is speech to it, ``silence()`` is not.
    """

    def __init__(self, threshold: float = 0.02) -> None:
        self.threshold = threshold
        self.chunks = 0

    def stream(self) -> SpeechProbability:
        return EnergyStream(self)

    def status(self) -> dict[str, object]:
        one = min(1, self.chunks)
        return {"rate": RATE, "calls": self.chunks, "chunks": self.chunks, "largest_batch": one}

    async def aclose(self) -> None:
        pass


class ToneVoice:
    """A ``FallbackSpeaker`` that speaks each sentence as a short tone.

    It stands in for Piper where the voice is not what is under test (what a degraded turn says and
    how it is marked are): sentences are split as the real voice splits them.
    """

    def __init__(self, seconds_per_sentence: float = 0.1) -> None:
        self.seconds = seconds_per_sentence
        self.loads = 0
        self.spoken: list[str] = []

    async def load(self) -> None:
        self.loads += 1

    async def speak(self, text: str) -> AsyncIterator[tuple[str, bytes]]:
        for sentence in split_sentences(text):
            self.spoken.append(sentence)
            yield sentence, tone(self.seconds, hz=220.0)


def memory_services(
    router: TurnRouter | None = None,
    *,
    vad: Vad | None = None,
    fallback: FallbackSpeaker | None = None,
    settings: EdgeSettings | None = None,
) -> EdgeServices:
    """``EdgeServices`` on stand-ins (a router with one empty reply, ``EnergyVad``, ``ToneVoice``) and
    in-memory stores; pass real ones for whatever is under test."""
    settings = settings or EdgeSettings(api_keys=("test-key",))
    return EdgeServices.with_models(
        settings,
        router if router is not None else ScriptedRouter(spoken_reply("Hello.")),
        vad=vad if vad is not None else EnergyVad(),
        fallback=fallback if fallback is not None else ToneVoice(),
    )


# -- the harness -------------------------------------------------------------------------------------


class SessionHarness:
    """One real ``RealtimeSession`` on ``services``; ``send()`` client events, read ``sent`` back."""

    def __init__(self, services: EdgeServices, state: SessionState | None = None) -> None:
        self.services = services
        self.state = state or initial_state(services.settings, key_id="test")
        self.sent: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self.session = RealtimeSession(services.session_deps(), self.state, self._receive)

    async def __aenter__(self) -> SessionHarness:
        await self.session.open()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.session.close()

    async def _receive(self, text: str) -> None:
        self.sent.append(json.loads(text))
        self._changed.set()

    async def send(self, event: dict[str, Any] | str | bytes) -> None:
        """One client frame, as JSON text (a dict is serialised) or raw bytes."""
        raw = json.dumps(event) if isinstance(event, dict) else event
        await self.session.handle(raw)
        await self.session.turns.settled()  # (deterministic: what the VAD heard in it is handled)

    async def turn_detection(self, **td: Any) -> None:
        """``session.update`` of the input's ``turn_detection`` alone (e.g. ``type="server_vad"``)."""
        session = {"type": "realtime", "audio": {"input": {"turn_detection": td}}}
        await self.send({"type": "session.update", "session": session})

    async def append_audio(self, pcm24k: bytes, *, chunk_s: float = 0.1) -> None:
        """``input_audio_buffer.append`` events of ``chunk_s`` each, as a microphone sends them."""
        step = 2 * int(chunk_s * 24_000)
        for off in range(0, len(pcm24k), step):
            audio = base64.b64encode(pcm24k[off : off + step]).decode()
            await self.send({"type": "input_audio_buffer.append", "audio": audio})

    async def say(self, text: str, *, role: str = "user") -> None:
        """``conversation.item.create`` with one text message."""
        kind = "input_text" if role in ("user", "system") else "output_text"
        item = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        await self.send({"type": "conversation.item.create", "event_id": new_id("evt"), "item": item})

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.sent if e["type"] == type_]

    async def wait_for(self, type_: str, count: int = 1, within_s: float = 30.0) -> list[dict[str, Any]]:
        """Wait until ``count`` events of ``type_`` were sent (in all); return everything sent so far.
        ``within_s`` only stops a broken test from hanging."""
        async with asyncio.timeout(within_s):
            while len(self.of_type(type_)) < count:
                self._changed.clear()
                await self._changed.wait()
        return list(self.sent)


async def run_events(
    services: EdgeServices,
    events: Sequence[dict[str, Any] | str | bytes],
    *,
    until: str,
    count: int = 1,
    within_s: float = 30.0,
) -> list[dict[str, Any]]:
    """Send ``events`` on a fresh session, wait for ``count`` server events of type ``until``, close
    the session and return every server event it sent (``session.created`` first)."""
    async with SessionHarness(services) as harness:
        for event in events:
            await harness.send(event)
        return await harness.wait_for(until, count, within_s)


__all__ = [
    "EnergyVad",
    "Hold",
    "Raise",
    "ScriptedRouter",
    "ScriptedTurn",
    "SessionHarness",
    "ToneVoice",
    "called",
    "clause",
    "heard",
    "memory_services",
    "run_events",
    "silence",
    "spoken_reply",
    "text_reply",
    "tone",
]
