"""The consumable recorded steps of a run, and rebuilding recorded failures."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from otel_agent_replay import RecordedToolError, agent_run, load_tape, record, tool
from otel_agent_replay.capture import NO_RULES
from otel_agent_replay.core import attributes as A
from otel_agent_replay.replayer._index import RunIndex, rebuild_exception
from otel_agent_replay.replayer._messages import ordinal
from otel_agent_replay.tape import StepError


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
