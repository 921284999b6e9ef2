"""The Scope base: record, replay and agent_run are context managers, async context managers and decorators."""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers.rawtape import raw_spans

from otel_agent_replay import agent_run, load_tape, record, replay, tool


@tool(side_effect="read_only")
def look(n: int) -> int:
    return n * 2


def test_record_is_a_decorator_too(tape: Path) -> None:
    @record(tape)
    @agent_run("decorated")
    def agent(n: int) -> int:
        return look(n)

    assert agent(2) == 4 and agent(3) == 6
    runs = load_tape(tape).runs
    assert [r.input for r in runs] == [{"n": 2}, {"n": 3}] and [r.output for r in runs] == [4, 6]


def test_async_functions_are_decorated_alike(tape: Path) -> None:
    @record(tape)
    @agent_run("async-agent")
    async def agent(n: int) -> int:
        await asyncio.sleep(0)
        return look(n)

    assert asyncio.run(agent(5)) == 10

    @replay(tape)
    @agent_run("async-agent")
    async def again(n: int) -> int:
        return look(n)

    assert asyncio.run(again(5)) == 10
    assert [s.name for s in raw_spans(tape)] == ["execute_tool look", "invoke_agent async-agent"]


def test_one_block_object_nests_with_its_own_state(tape: Path) -> None:
    block = agent_run("outer")
    with record(tape), block as first:
        with block as second:
            look(1)
        look(2)
    assert first.run_id != second.run_id
    assert sorted(len(r.steps) for r in load_tape(tape).runs) == [1, 1]


def test_one_agent_run_decorates_several_functions(tape: Path) -> None:
    run = agent_run("shared")

    @run
    def first(a: int) -> int:
        return look(a)

    @run
    def second(b: str, c: int = 1) -> int:
        return look(c)

    with record(tape):
        assert first(1) == 2 and second("x") == 2
    assert [r.input for r in load_tape(tape).runs] == [{"a": 1}, {"b": "x", "c": 1}]
