"""Checks on what an edge sends, before any work starts: each failure is a ``wire.errors`` class."""

from __future__ import annotations

from region.settings import LimitSettings
from wire.audio import STT_RATE
from wire.errors import BadAudio, BadEvent, HistoryTooLong, TextTooLong
from wire.turn import NamedTool, TurnStart

MAX_TOOLS = 128


def check_start(start: TurnStart, limits: LimitSettings) -> None:
    """What can be judged from ``turn.start`` alone (the voice is the synthesizer's to judge)."""
    if not start.turn_id:
        raise BadEvent("turn.start needs a non-empty turn_id")
    if len(start.history) > limits.max_history_messages:
        raise HistoryTooLong(
            f"history has {len(start.history)} messages;"
            f" this region accepts at most {limits.max_history_messages}"
        )
    chars = sum(len(m.content) for m in start.history)
    if chars > limits.max_history_chars:
        raise HistoryTooLong(
            f"history has {chars} characters; this region accepts at most {limits.max_history_chars}"
        )
    for name, value in (
        ("text", start.text),
        ("transcript", start.transcript),
        ("heard_text", start.heard_text),
        ("speak_text", start.speak_text),
        ("prompt", start.prompt),
    ):
        if value is not None and len(value) > limits.max_text_chars:
            raise TextTooLong(f"{name} has {len(value)} characters; the limit is {limits.max_text_chars}")
    if start.max_output_tokens < 1:
        raise BadEvent("max_output_tokens must be at least 1")
    check_tools(start)
    if not 0.25 <= start.speed <= 4.0:  # (NaN fails too)
        raise BadEvent(f"speed must be in [0.25, 4.0], got {start.speed}")
    if start.is_batch and start.speak_text is None:
        raise BadEvent("priority 'batch' is for speak_text turns only (a speech batch's items)")
    if start.speak_text is not None:
        if not start.speak_text.strip():
            raise BadEvent("speak_text is empty: nothing to say")
        return  # read aloud: no audio, no user words
    speaks_text = start.text is not None or start.transcript is not None
    if start.audio_bytes < 0:
        raise BadAudio("audio_bytes cannot be negative")
    if start.transcribe_only and start.audio_bytes == 0 and start.transcript is None:
        raise BadAudio("a transcribe_only turn needs audio (or the transcript a failover carries)")
    if start.audio_bytes == 0:
        if not speaks_text:
            raise BadAudio("the turn has no audio (audio_bytes is 0) and no text: nothing to answer")
        return
    if start.audio_format != "pcm16":
        raise BadAudio(
            f"audio_format {start.audio_format!r} is not supported: send 'pcm16' (mono, little-endian)"
        )
    if start.sample_rate != STT_RATE:
        raise BadAudio(f"sample_rate {start.sample_rate} is not supported: send {STT_RATE} Hz mono PCM16")
    check_audio_length(start.audio_bytes, limits)


def check_audio_length(n_bytes: int, limits: LimitSettings) -> None:
    if n_bytes == 0:
        raise BadAudio("the audio frame is empty")
    if n_bytes % 2:
        raise BadAudio(f"{n_bytes} bytes is not whole PCM16 samples (odd byte count)")
    seconds = n_bytes / 2 / STT_RATE
    if seconds > limits.max_audio_s:
        raise BadAudio(
            f"the audio is {seconds:.1f} s long; this region accepts at most {limits.max_audio_s:.0f} s"
        )


def check_audio_frame(start: TurnStart, frame: bytes, limits: LimitSettings) -> None:
    check_audio_length(len(frame), limits)
    if len(frame) != start.audio_bytes:
        raise BadAudio(f"turn.start announced {start.audio_bytes} audio bytes but the frame has {len(frame)}")


def check_tools(start: TurnStart) -> None:
    """Tools named, unique and bounded; a named ``tool_choice`` names one of them."""
    if len(start.tools) > MAX_TOOLS:
        raise BadEvent(f"{len(start.tools)} tools; this region accepts at most {MAX_TOOLS}")
    names = [t.name for t in start.tools]
    if any(not n for n in names) or len(set(names)) != len(names):
        raise BadEvent("every tool needs a name of its own")
    choice = start.tool_choice
    if isinstance(choice, NamedTool) and choice.name not in names:
        raise BadEvent(f"tool_choice names {choice.name!r}, which is not one of the tools")
