"""What the region asks vLLM for: the chat, the template flags, and failover continuation."""

from __future__ import annotations

from region.llm import VllmClient
from region.settings import LlmSettings
from wire.turn import Message, TurnStart

QWEN = LlmSettings(
    model="Qwen/Qwen3-8B", served_name="qwen3-8b", chat_template_kwargs={"enable_thinking": False}
)


def body(start: TurnStart, settings: LlmSettings = QWEN) -> dict[str, object]:
    return VllmClient(settings, "http://127.0.0.1:1/v1", system_prompt="Be brief.").request_body(
        start, "Hi there"
    )


def test_a_fresh_turn_asks_for_a_new_assistant_message() -> None:
    start = TurnStart(
        turn_id="t", instructions="Speak like a pirate.", history=[Message(role="user", content="Earlier")]
    )
    b = body(start)
    assert b["messages"] == [
        {"role": "system", "content": "Be brief.\n\nSpeak like a pirate."},
        {"role": "user", "content": "Earlier"},
        {"role": "user", "content": "Hi there"},
    ]
    assert b["stream"] is True and b["model"] == "qwen3-8b"
    assert b["chat_template_kwargs"] == {"enable_thinking": False}  # Qwen3 must not think out loud
    assert "continue_final_message" not in b


def test_a_failed_over_turn_continues_after_what_the_user_heard() -> None:
    b = body(TurnStart(turn_id="t", transcript="Hi there", heard_text="Hello! The weather today"))
    assert b["messages"][-1] == {"role": "assistant", "content": "Hello! The weather today"}  # type: ignore[index]
    assert b["continue_final_message"] is True and b["add_generation_prompt"] is False


def test_no_template_flags_for_a_model_without_them() -> None:
    b = body(TurnStart(turn_id="t"), LlmSettings(model="m", served_name="m"))
    assert "chat_template_kwargs" not in b
