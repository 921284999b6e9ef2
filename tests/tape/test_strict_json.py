"""Strict JSON: repeated keys, NaN and Infinity are refused, and the refusal is said in words."""

from __future__ import annotations

import json

import orjson
import pytest

from otel_agent_replay.tape._strict_json import (
    NON_FINITE_PROBLEM,
    DuplicateKeyError,
    StrictScanner,
    duplicate_position,
    json_kind,
    json_kind_at,
    json_problem,
    refuse_duplicate_pairs,
)


def test_the_scanner_reads_a_value_and_says_where_it_ends() -> None:
    text = '  {"a": [1, 2.5, "x"], "b": null} tail'
    value, end = StrictScanner().value(text, 2)
    assert value == {"a": [1, 2.5, "x"], "b": None}
    assert text[end:] == " tail"


@pytest.mark.parametrize("literal", ["NaN", "-Infinity", "1e400"])
def test_the_scanner_refuses_non_finite_numbers(literal: str) -> None:
    text = f'{{"x": [1, {literal}]}}'
    with pytest.raises(json.JSONDecodeError) as info:
        StrictScanner().value(text, 0)
    assert json_problem(info.value) == NON_FINITE_PROBLEM
    if literal != "1e400":  # a literal NaN or Infinity is pointed at
        assert text[info.value.pos :].startswith(literal)


def test_the_scanner_refuses_a_repeated_key_at_any_depth() -> None:
    with pytest.raises(DuplicateKeyError) as info:
        StrictScanner().value('{"a": {"k": 1, "k": 2}}', 0)
    assert info.value.key == "k"


def test_the_scanner_turns_a_missing_value_into_a_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError, match="Expecting value") as info:
        StrictScanner().value("  ]", 2)
    assert json_problem(info.value) == "invalid JSON (Expecting value at column 3)"


def test_json_problem_names_nan_in_orjson_errors_too() -> None:
    with pytest.raises(orjson.JSONDecodeError) as nan:
        orjson.loads('{"x": NaN}')
    assert json_problem(nan.value) == NON_FINITE_PROBLEM
    with pytest.raises(orjson.JSONDecodeError) as broken:
        orjson.loads('{"x": }')
    assert json_problem(broken.value).startswith("invalid JSON (")


def test_the_pairs_hook_only_checks() -> None:
    refuse_duplicate_pairs([("a", 1), ("b", 2)])  # no repeated key: nothing happens
    with pytest.raises(DuplicateKeyError, match="b"):
        refuse_duplicate_pairs([("a", 1), ("b", 2), ("b", 3)])


def test_duplicate_position_is_where_the_offending_object_opens() -> None:
    text = '[{"a": 1}, {"b": 1, "b": 2}]'
    assert duplicate_position(text, 0) == text.index('{"b"')
    assert duplicate_position('{"a": 1}', 0) == 0  # no repeated key: the start


@pytest.mark.parametrize(
    ("value", "kind"),
    [({}, "an object"), ([], "an array"), ("s", "a string"), (True, "a boolean"), (1.5, "a number"), (None, "null")],
)
def test_json_kind_of_values_and_of_text(value: object, kind: str) -> None:
    assert json_kind(value) == kind
    assert json_kind_at(json.dumps(value), 0) == kind


def test_json_kind_at_the_end_or_at_no_value() -> None:
    assert json_kind_at("[1]", 3) == "the end of the text"
    assert json_kind_at("-1", 0) == "a number"
    assert json_kind_at("}", 0) is None
