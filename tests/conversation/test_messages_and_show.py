"""The tape's model steps hold ``gen_ai.input.messages`` / ``gen_ai.output.messages`` in the GenAI
conventions' shape (role + parts), for HTTP model steps (OpenAI, Anthropic; JSON and streamed) and
decorated model calls; ``show`` and ``show --conversation`` print what the model said."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.minting_server import minting_provider
from helpers.rawtape import raw_spans
from helpers.weather_agents import CASES
from helpers.weather_agents import record_weather as _record

from otel_agent_replay import agent_run, model_call, record
from otel_agent_replay.cli import main
from otel_agent_replay.core import attributes as A

ROLES = {"system", "user", "assistant", "tool"}


def _valid(messages: Any) -> None:
    """The conventions' schema, checked by hand: a list of {role, parts}, each part typed with its fields."""
    assert isinstance(messages, list) and messages
    for message in messages:
        assert message["role"] in ROLES and isinstance(message["parts"], list)
        assert set(message) <= {"role", "parts", "name"}
        for part in message["parts"]:
            kind = part["type"]
            if kind == "text":
                assert isinstance(part["content"], str)
            elif kind == "tool_call":
                assert isinstance(part["name"], str) and part["name"] and "arguments" in part
            elif kind == "tool_call_response":
                assert "response" in part
            else:
                raise AssertionError(f"unexpected part {part}")


@pytest.mark.parametrize(("which", "stream"), CASES, ids=[f"{w}-{'stream' if s else 'json'}" for w, s in CASES])
def test_model_steps_hold_messages_in_the_conventions_shape(tmp_path: Path, which: str, stream: bool) -> None:
    tape = tmp_path / "t.jsonl"
    with minting_provider() as provider:
        _record(provider, which, stream, "Paris", tape)
    first, second = [s.attrs for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    for attrs in (first, second):
        _valid(orjson.loads(attrs[A.GEN_AI_INPUT_MESSAGES]))
        _valid(orjson.loads(attrs[A.GEN_AI_OUTPUT_MESSAGES]))
    asked = orjson.loads(first[A.GEN_AI_INPUT_MESSAGES])
    assert asked == [{"role": "user", "parts": [{"type": "text", "content": "What is the weather in Paris?"}]}]
    (call,) = [p for m in orjson.loads(first[A.GEN_AI_OUTPUT_MESSAGES]) for p in m["parts"] if p["type"] == "tool_call"]
    assert call["name"] == "get_weather" and call["arguments"] == {"city": "Paris"}  # streamed fragments joined
    assert call["id"].startswith("toolu_" if which == "anthropic" else "call_")
    history = orjson.loads(second[A.GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    (answer,) = history[2]["parts"]
    assert answer["type"] == "tool_call_response" and answer["id"] == call["id"]
    assert answer["response"] == "sunny in Paris"
    if not stream:  # prompt-cache tokens under the conventions' current names (cache_write, not cache_creation)
        cache = (A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, A.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS)
        assert cache == ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_write.input_tokens")
        if which == "anthropic":
            assert first[cache[1]] == 25 and cache[0] not in first
        else:
            assert first[cache[0]] == 16 and cache[1] not in first
    said = orjson.loads(second[A.GEN_AI_OUTPUT_MESSAGES])
    assert said[0]["role"] == "assistant" and "sunny in Paris" in said[0]["parts"][0]["content"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_show_prints_what_an_anthropic_model_said_and_the_run_as_a_conversation(
    tmp_path: Path, stream: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    tape = tmp_path / "t.jsonl"
    with minting_provider() as provider:
        _record(provider, "anthropic", stream, "Paris", tape)
    assert main(["show", str(tape)]) == 0
    shown = capsys.readouterr().out
    assert 'said Let me look that up. · → get_weather({"city":"Paris"})' in shown
    assert "said It is sunny in Paris." in shown
    assert '"status"' not in shown and "content-type" not in shown  # not the HTTP envelope
    assert main(["show", str(tape), "--conversation"]) == 0
    chat = capsys.readouterr().out.splitlines()
    lines = [line.strip() for line in chat]
    user = lines.index("user: What is the weather in Paris?")
    assistant = lines.index("assistant: Let me look that up.")
    assert lines[assistant + 1] == '→ get_weather({"city":"Paris"})'
    ran = next(i for i, line in enumerate(lines) if line.startswith("⚙ get_weather"))
    tool = lines.index("tool: ← sunny in Paris")
    final = next(i for i, line in enumerate(lines) if line.startswith("assistant: It is sunny in Paris."))
    assert user < assistant < ran < tool < final
    assert sum(1 for line in lines if line.startswith("user: What is the weather")) == 1  # history not repeated
    assert main(["show", str(tape), "--json"]) == 0
    (run,) = orjson.loads(capsys.readouterr().out)
    assert run["steps"][0]["result"]["status"] == 200  # --json keeps the step as recorded


def test_a_decorated_model_call_gets_messages_and_show_prints_no_control_sequence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    @model_call(provider="test")
    def chat(model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        said = "red \x1b[31mALERT\x1b[0m done"
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": said}, "finish_reason": "stop"}]}

    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"):
        chat("m", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    (step,) = [s.attrs for s in raw_spans(tape) if s.attrs.get(A.KIND) == "llm"]
    sent = orjson.loads(step[A.GEN_AI_INPUT_MESSAGES])
    _valid(sent)
    assert [m["role"] for m in sent] == ["system", "user"]
    _valid(orjson.loads(step[A.GEN_AI_OUTPUT_MESSAGES]))
    for args in (["show", str(tape)], ["show", str(tape), "--conversation"]):
        assert main(args) == 0
        shown = capsys.readouterr().out
        assert "ALERT" in shown and "\x1b" not in shown and "\\x1b[31m" in shown
