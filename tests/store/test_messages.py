"""Messages of model steps → the transcript: the shapes understood, roles, the history sent again."""

from __future__ import annotations

from pathlib import Path

import orjson

from otel_agent_replay import agent_run, load_tape, model_call, record
from otel_agent_replay.store._messages import Message, messages_of, transcript


def test_message_shapes_and_roles() -> None:
    anthropic = [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {"q": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "found"}]},
    ]
    got = messages_of(orjson.dumps(anthropic).decode(), "user")
    assert [(m.role, m.content) for m in got] == [("user", "Hi"), ("assistant", None), ("tool", "found")]
    assert got[1].tool_calls_json is not None and orjson.loads(got[1].tool_calls_json)[0]["name"] == "lookup"
    responses = [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
        {"type": "function_call", "name": "refund", "call_id": "c9", "arguments": "{}"},
    ]
    assert [(m.role, m.content) for m in messages_of(responses, "assistant")] == [
        ("assistant", "Done."),
        ("assistant", None),
    ]
    semconv = [
        {"role": "developer", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": {"ok": True}}]},
        {"role": "model", "parts": [{"type": "tool_call", "id": "c2", "name": "search", "arguments": {}}]},
    ]
    assert [(m.role, m.content) for m in messages_of(semconv, "user")] == [
        ("system", "Be brief."),
        ("tool", '{"ok":true}'),
        ("assistant", None),
    ]
    assert messages_of([{"role": "narrator", "content": "x"}], "assistant") == [Message("assistant", "x", None)]
    assert messages_of("not json", "user") == [Message("user", "not json", None)]
    assert messages_of(42, "user") == []


@model_call(provider="stand-in", model="m")
def ask(messages: list[dict[str, str]]) -> dict[str, object]:
    return {"choices": [{"message": {"role": "assistant", "content": f"answer {len(messages)}"}}]}


def test_the_history_sent_again_is_stored_once(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("chatty"):
        history = [{"role": "system", "content": "s"}, {"role": "user", "content": "q1"}]
        history.append(ask(history)["choices"][0]["message"])  # type: ignore[index]
        history.append({"role": "user", "content": "q2"})
        ask(history)
        ask([{"role": "user", "content": "another conversation"}])
    steps = list(load_tape(tape).runs[0].steps)
    got = [
        (side, i, m.role, m.content)
        for _, side, i, m in transcript(steps, "gen_ai.input.messages", "gen_ai.output.messages")
    ]
    assert got == [
        ("in", 0, "system", "s"),
        ("in", 1, "user", "q1"),
        ("out", 0, "assistant", "answer 2"),
        ("in", 3, "user", "q2"),  # the system message, q1 and the echoed answer are not stored again
        ("out", 0, "assistant", "answer 4"),
        ("in", 0, "user", "another conversation"),
        ("out", 0, "assistant", "answer 1"),
    ]
