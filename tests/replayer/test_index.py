"""The consumable recorded steps of a run, and rebuilding recorded failures."""

from __future__ import annotations

import dataclasses
import gc
from collections import deque
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_agent_replay import RecordedToolError, agent_run, load_tape, record, tool
from otel_agent_replay.capture import NO_RULES
from otel_agent_replay.core import attributes as A
from otel_agent_replay.replayer._index import RunIndex, rebuild_exception
from otel_agent_replay.replayer._messages import ordinal
from otel_agent_replay.tape import Run, Step, StepError


@tool(side_effect="read_only")
def lookup(sku: str) -> int:
    return len(sku)


@pytest.fixture
def index(tmp_path: Path) -> RunIndex:
    tape = tmp_path / "t.jsonl"
    with record(tape), agent_run("a"):
        lookup("a")
        lookup("bb")
        lookup("a")
    return RunIndex(load_tape(tape).runs[0])


def test_take_serves_each_step_once_in_recorded_order(index: RunIndex) -> None:
    key_a = index.steps[0].call_key
    first, second = index.take(key_a), index.take(key_a)
    assert first is not None and second is not None and (first.seq, second.seq) == (1, 3)
    assert index.take(key_a) is None
    assert [s.seq for s in index.unused()] == [2]


def test_position_is_free_only_while_unconsumed(index: RunIndex) -> None:
    assert index.at_position("lookup", 2) is index.steps[1]
    index.take(index.steps[1].call_key)
    assert index.at_position("lookup", 2) is None
    assert index.at_position("lookup", 9) is None and index.at_position("other", 1) is None


def test_nearest_ranks_by_fewest_differences(index: RunIndex) -> None:
    ((step, changes), *_) = index.nearest("lookup", {"sku": "bb"})
    assert step.seq == 2 and changes == []


def test_keys_recorded_under_the_rules_in_force_are_kept(tmp_path: Path) -> None:
    tape = tmp_path / "ruled.jsonl"
    with record(tape, key_ignore={"lookup": ["sku"]}), agent_run("a"):
        lookup("a")
        lookup("bb")
    ruled = RunIndex(load_tape(tape).runs[0])
    recorded = ruled.steps[0].call_key
    assert not ruled.keyed_otherwise("lookup", ("sku",))  # recorded under these rules: nothing to recompute
    assert ruled.keyed_otherwise("lookup", ()) and ruled.keyed_otherwise("lookup", ("other",))
    ruled.rekey("lookup", (), NO_RULES)  # without the rules the keys differ per argument
    assert ruled.take(recorded) is None and not ruled.keyed_otherwise("lookup", ())
    mixed = load_tape(tape).runs[0]
    first = mixed.steps[0]
    attributes = {**first.attributes, A.KEY_IGNORE: '["other"]'}
    steps = (dataclasses.replace(first, attributes=attributes), *mixed.steps[1:])
    assert RunIndex(dataclasses.replace(mixed, steps=steps)).keyed_otherwise("lookup", ("sku",))  # two rule sets


def _run_of(template: Step, calls: list[tuple[str, int]]) -> Run:
    """A run whose nth step is a call of ``tool`` with argument ``arg`` (keys repeat when calls do)."""
    steps = tuple(
        dataclasses.replace(
            template, tool=tool, seq=n, step_id=f"{tool}#{n}", span_id=f"{n:016x}", call_key=f"{tool}:{arg}"
        )
        for n, (tool, arg) in enumerate(calls, start=1)
    )
    return Run("r", "0" * 32, "f" * 16, "a", None, None, None, None, steps)


_CALLS = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3)), min_size=1, max_size=30)
_OPS = st.lists(
    st.tuples(st.sampled_from(["take", "has", "at", "take_at"]), st.sampled_from(["a", "b"]), st.integers(0, 9)),
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=_CALLS, ops=_OPS)
def test_the_index_serves_as_queues_of_steps_per_key_would(
    index: RunIndex, calls: list[tuple[str, int]], ops: list[tuple[str, str, int]]
) -> None:
    """The index keeps positions, not a queue per key: on generated runs and operations it answers what
    the plain model (a deque per key, a consumed set, the tool's calls by position) answers."""
    run = _run_of(index.steps[0], calls)
    ours = RunIndex(run)
    queues: dict[str, deque[Step]] = {}
    by_tool: dict[str, list[Step]] = {}
    for step in run.steps:
        queues.setdefault(step.call_key, deque()).append(step)
        by_tool.setdefault(step.tool, []).append(step)
    consumed: set[int] = set()

    def model_take(key: str) -> Step | None:
        queue = queues.get(key, deque())
        while queue:
            step = queue.popleft()
            if id(step) not in consumed:
                consumed.add(id(step))
                return step
        return None

    def model_at(tool: str, n: int) -> Step | None:
        recorded = by_tool.get(tool, [])
        return recorded[n - 1] if 0 < n <= len(recorded) and id(recorded[n - 1]) not in consumed else None

    for op, name, arg in ops:
        key = f"{name}:{arg % 4}"
        if op == "take":
            assert ours.take(key) is model_take(key)
        elif op == "has":
            assert ours.has(key) == any(id(s) not in consumed for s in queues.get(key, ()))
        elif op == "at":
            assert ours.at_position(name, arg) is model_at(name, arg)
        else:
            expected = model_at(name, arg)
            if expected is not None:
                consumed.add(id(expected))
            assert ours.take_at_position(name, arg) is expected
    assert ours.unused() == [s for s in run.steps if id(s) not in consumed]
    assert ours.calls_of("a") == by_tool.get("a", [])


def test_a_large_run_adds_no_object_per_step_for_the_collector(index: RunIndex) -> None:
    """The index of a 5,000-step run is a few containers: a full collection does not walk one per step."""
    run = _run_of(index.steps[0], [("a", n) for n in range(5_000)])
    gc.collect()
    before = len(gc.get_objects())
    built = RunIndex(run)
    assert len(gc.get_objects()) - before < 50
    assert built.take("a:4999") is run.steps[-1]


def test_rebuilding_recorded_exceptions_is_safe() -> None:
    assert type(rebuild_exception(StepError("builtins.ValueError", "bad"))) is ValueError
    assert type(rebuild_exception(StepError("TimeoutError", "slow"))) is TimeoutError  # foreign: no module
    never_imported = rebuild_exception(StepError("some_module_not_imported.Boom", "x"))
    assert isinstance(never_imported, RecordedToolError) and never_imported.type_name.endswith("Boom")
    assert isinstance(rebuild_exception(StepError("builtins.SystemExit", "x")), RecordedToolError)  # not Exception
    assert isinstance(rebuild_exception(StepError("os.system", "x")), RecordedToolError)  # not a type


def test_ordinals() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "101st",
        "111th",
    ]
