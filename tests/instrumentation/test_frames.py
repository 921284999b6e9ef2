"""A tool decorated twice is one step; ``@tool`` costs a recursive agent as few frames as it can."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

from otel_agent_replay import agent_run, load_tape, model_call, record, tool
from otel_agent_replay.instrumentation import tool_spec


def test_a_tool_decorated_twice_records_one_step(tmp_path: Path) -> None:
    tape = tmp_path / "t.jsonl"
    calls: list[int] = []

    def lookup(n: int) -> int:
        calls.append(n)
        return n + 1

    twice = tool(side_effect="write", version="2")(tool(side_effect="read_only")(lookup))
    with record(tape), agent_run("a"):
        assert twice(1) == 2
    (step,) = load_tape(tape).runs[0].steps
    assert calls == [1]
    assert step.side_effect == "write" and step.tool_version == "2" and step.tool == "lookup"  # the outer wins
    assert tool_spec(twice).function is lookup  # type: ignore[union-attr]
    assert inspect.unwrap(twice).__name__ == "lookup"  # the readers' twin of lookup (docs/design.md)

    chat = model_call(model="m")(model_call(provider="p")(lambda prompt: {"text": prompt}))
    with record(tape), agent_run("b"):
        chat("hi")
    assert len(load_tape(tape).runs[1].steps) == 1


def _deepest(fn: Callable[[int], int]) -> int:
    lo, hi = 1, 5000
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            fn(mid)
            lo = mid
        except RecursionError:
            hi = mid - 1
    return lo


def plain(n: int) -> int:
    return 0 if n == 0 else plain(n - 1) + 1


@tool(side_effect="read_only")
def down(n: int) -> int:
    return 0 if n == 0 else down(n - 1) + 1


def test_tool_costs_one_frame_per_call(tmp_path: Path) -> None:
    """The wrapper is the only frame between two levels: half the plain depth, minus the span's own frames."""
    bare = _deepest(plain)
    assert _deepest(down) >= bare // 2 - 3  # before: a third (997 -> 331)
    with record(tmp_path / "t.jsonl"), agent_run("a"):
        assert _deepest(down) >= bare // 2 - 10  # before: 326
