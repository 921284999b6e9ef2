"""Field-level differences between JSON values."""

from __future__ import annotations

from otel_agent_replay.comparison._diff import ABSENT, Difference, describe, json_changes, short


def test_changes_are_leaf_level_with_paths() -> None:
    left = {"max_words": 120, "items": [{"id": 1}, {"id": 2}], "gone": True}
    right = {"max_words": 80, "items": [{"id": 1}, {"id": 3}, {"id": 4}], "new": None}
    changes = json_changes(left, right)
    assert [c.brief() for c in changes] == [
        "gone: true → (absent)",
        "items[1].id: 2 → 3",
        'items[2]: (absent) → {"id":4}',
        "max_words: 120 → 80",
        "new: (absent) → null",
    ]


def test_types_matter() -> None:
    assert json_changes({"n": 3}, {"n": "3"}) == [Difference("n", 3, "3")]
    assert json_changes([True], [1]) == [Difference("[0]", True, 1)]
    assert json_changes({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == []


def test_describe_and_short() -> None:
    many = [Difference(f"k{i}", i, i + 1) for i in range(10)]
    assert describe(many, limit=2) == "k0: 0 → 1; k1: 1 → 2; and 8 more"
    assert describe([]) == "no difference"
    assert short("x" * 100, 10) == '"xxxxxxxx…'
    assert short({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    assert short(ABSENT) == "(absent)"
