"""Key rules: path patterns in compare's syntax, ``[*]`` for any index, the volatile-fields preset."""

from __future__ import annotations

from otel_agent_replay.capture import VOLATILE_MODEL_FIELDS, KeyRules, canonical_json, expand, key_from_json

ARGS = {
    "model": "m",
    "user": "u-1",
    "messages": [
        {"role": "system", "content": "Today is 2025-01-31"},
        {"role": "tool", "tool_call_id": "call_1", "content": "x"},
        {"role": "assistant", "tool_calls": [{"id": "call_2", "function": {"name": "f"}}]},
    ],
}


def _key(patterns: tuple[str, ...], args: object = ARGS) -> str:
    return KeyRules().key("chat", args, expand(patterns))


def test_no_patterns_is_the_plain_call_key() -> None:
    assert KeyRules().key("chat", ARGS, ()) == key_from_json("chat", canonical_json(ARGS))


def test_an_index_pattern_and_any_index() -> None:
    other = {**ARGS, "messages": [{**ARGS["messages"][0], "content": "Today is 2025-02-01"}, *ARGS["messages"][1:]]}
    assert _key(("messages[0].content",)) == _key(("messages[0].content",), other)
    assert _key(("messages[1].content",)) != _key(("messages[1].content",), other)  # another index
    assert _key(("messages[*].content",)) == _key(("messages[*].content",), other)


def test_wildcards_and_the_args_prefix() -> None:
    assert _key(("args.user",)) == _key(("user",)) != _key(())
    assert _key(("*.tool_call_id",)) == _key(("messages[1].tool_call_id",))
    assert _key(("messages[*].tool_calls[*].id",)) == _key(("messages[2].tool_calls[0].id",))


def test_the_preset_expands_and_removes_volatile_fields() -> None:
    assert expand(("@model_volatile", "x")) == (*VOLATILE_MODEL_FIELDS, "x")
    rotated = {
        **ARGS,
        "user": "u-2",
        "messages": [
            ARGS["messages"][0],
            {**ARGS["messages"][1], "tool_call_id": "call_9"},
            {"role": "assistant", "tool_calls": [{"id": "call_8", "function": {"name": "f"}}]},
        ],
    }
    assert _key(("@model_volatile",)) == _key(("@model_volatile",), rotated)
    assert _key(()) != _key((), rotated)


def test_rules_per_tool_and_for_every_tool() -> None:
    rules = KeyRules({"*": ["a"], "chat": "b"}).merged({"chat": ["c"]})
    assert rules.for_tool("chat") == ("a", "b", "c")
    assert rules.for_tool("other", ("z",)) == ("z", "a")
