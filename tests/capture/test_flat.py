"""Dicts of scalars (and of dicts and lists of them, a few levels deep) take a shortcut to JSON data
(``capture._flat``); it must give what the rule gives.

The rule is ``orjson.loads(json_text(value))`` (then ``normalize`` for keys). Each dict below is made
both ways and compared, types included (``True`` is not ``1``); the dicts the shortcut declines
(non-ASCII text, integers beyond 64 bits, NaN, odd keys, at any depth; nesting deeper than it follows;
a cycle) must come out as the rule says.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson
import pytest

from otel_agent_replay.capture._canonical import (
    canonical_value,
    json_text,
    key_from_json,
    normalize,
    to_jsonable,
)
from otel_agent_replay.capture._flat import flat_json

CASES: list[dict[Any, Any]] = [
    {},
    {"query": " refund policy ", "limit": 5},
    {"a": None, "b": True, "c": False, "d": 0, "e": -1},
    {"f": 1.23456789012, "g": -0.0, "h": 1e300, "i": 3.0},
    {"big": 2**64 - 1, "neg": -(2**63)},
    {"beyond": 2**64},
    {"below": -(2**63) - 1},
    {"nan": math.nan},
    {"inf": math.inf, "x": 1},
    {"text": "naïve"},
    {"clé": 1},
    {1: "one"},
    {"nested": {"a": 1}},
    {"list": [1, 2]},
    {"tuple": (1, 2)},
    {"bytes": b"\x00\x01"},
    {"blank": "   ", "tab": "\tx\n"},
    {"query": {"limit": "5", "query": " refund policy "}},
    {"query": {"tag": ["a ", " b"], "gone": None}, "body": {"n": [1, None, 2.5, True, {"x": None}]}},
    {"rows": [[1, 2], (3, 4.00000001)], "empty": {}, "none": []},
    {"deep": {"a": {"b": {"c": {"d": {"e": 1}}}}}},
    {"inner": {"text": "naïve"}},
    {"inner": [2**64]},
    {"inner": {"nan": math.nan}},
    {"inner": {1: "one"}},
    {"inner": [{"clé": 1}]},
    {"inner": {"set": {1, 2}}},
]


def _types(value: Any) -> Any:
    """A value with each scalar paired with its type, so that equal-but-different values (1 and True) differ."""
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return (type(value), value)


@pytest.mark.parametrize("value", CASES, ids=repr)
def test_to_jsonable_is_the_rule(value: dict[Any, Any]) -> None:
    assert _types(to_jsonable(value)) == _types(orjson.loads(json_text(value)))


@pytest.mark.parametrize("value", CASES, ids=repr)
def test_canonical_value_is_normalize_of_the_rule(value: dict[Any, Any]) -> None:
    assert _types(canonical_value(value)) == _types(normalize(orjson.loads(json_text(value))))


def test_the_shortcut_takes_plain_arguments_and_declines_the_rest() -> None:
    assert flat_json({"query": " q ", "limit": 5, "x": None}, True) == {"query": "q", "limit": 5}
    assert flat_json({"query": " q ", "x": None}, False) == {"query": " q ", "x": None}
    assert flat_json({"q": {"a": " x ", "b": None}, "l": [None, " y "]}, True) == {"q": {"a": "x"}, "l": [None, "y"]}
    assert flat_json({"q": {"a": " x ", "b": None}, "t": (1,)}, False) == {"q": {"a": " x ", "b": None}, "t": [1]}
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    declined: list[dict[Any, Any]] = [
        {"beyond": 2**64},
        {"nan": math.nan},
        {"text": "naïve"},
        {1: 1},
        {"n": {"a": [2**64]}},
        {"n": {"a": {"b": {"c": {"d": 1}}}}},
        {"s": {1, 2}},
        cycle,
    ]
    for value in declined:
        assert flat_json(value, True) is None, value


def test_a_cycle_is_marked_as_the_rule_marks_it() -> None:
    cycle: dict[str, Any] = {"q": "x"}
    cycle["self"] = cycle
    assert to_jsonable(cycle) == orjson.loads(json_text(cycle))
    assert canonical_value(cycle) == normalize(orjson.loads(json_text(cycle)))


def test_a_copy_not_the_callers_dict() -> None:
    given: dict[str, Any] = {"a": 1, "q": {"b": [1]}}
    made = to_jsonable(given)
    made["b"] = 2
    made["q"]["c"] = 3
    made["q"]["b"].append(2)
    assert given == {"a": 1, "q": {"b": [1]}}


@pytest.mark.parametrize("text", ['{"limit":5,"query":"refund policy"}', "{}", "x" * 5000])
def test_call_key_is_the_sha256_of_the_text_every_time(text: str) -> None:
    expected = f"search:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"
    assert [key_from_json("search", text) for _ in range(3)] == [expected] * 3
    assert key_from_json("other", text) == f"other:{expected.split(':')[1]}"
