"""The life of a step: errors, ids, nesting, concurrency and threads without context."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.rawtape import raw_spans, run_span_of, steps_of
from helpers.sample_tools import explode, plain_tool, summarise
from opentelemetry import trace

from otel_agent_replay import agent_run, record, tool
from otel_agent_replay.core import attributes as A


def test_tool_error_is_recorded_and_reraised_unchanged(tape: Path) -> None:
    with record(tape), agent_run("a"):
        with pytest.raises(KeyError) as caught:
            explode("no such order")
        assert caught.value.args == ("no such order",)
    (step,) = steps_of(tape)
    assert step.span["status"]["code"] == 2
    (event,) = step.span["events"]
    assert event["name"] == "exception"
    event_attrs = {a["key"]: a["value"]["stringValue"] for a in event["attributes"]}
    assert event_attrs[A.EXCEPTION_TYPE] == "builtins.KeyError"
    assert "no such order" in event_attrs[A.EXCEPTION_MESSAGE]
    assert A.GEN_AI_TOOL_CALL_RESULT not in step.attrs


def test_step_ids_and_parent_step_ids(tape: Path) -> None:
    @tool(side_effect="read_only")
    def outer(n: int) -> int:
        return plain_tool(n) + plain_tool(n + 1)

    with record(tape), agent_run("a"):
        plain_tool(1)  # first step: no parent
        summarise([{"role": "user", "content": "x"}])
        outer(1)  # asked for by the model step
        plain_tool(2)
    steps = {s.attrs[A.SEQ]: s.attrs for s in steps_of(tape)}
    assert steps[1][A.STEP_ID] == "plain_tool#1" and steps[1][A.PARENT_STEP_ID] == ""
    assert steps[2][A.STEP_ID] == "summarise#1" and steps[2][A.PARENT_STEP_ID] == ""
    assert steps[3][A.STEP_ID] == "outer#1" and steps[3][A.PARENT_STEP_ID] == "summarise#1"
    assert steps[4][A.STEP_ID] == "outer#1/plain_tool#1" and steps[4][A.PARENT_STEP_ID] == "outer#1"
    assert steps[5][A.STEP_ID] == "outer#1/plain_tool#2"
    assert steps[6][A.STEP_ID] == "plain_tool#2" and steps[6][A.PARENT_STEP_ID] == "summarise#1"


def test_user_spans_inside_a_tool_land_in_the_tape(tape: Path) -> None:
    @tool(side_effect="read_only")
    def http_get(url: str) -> int:
        with trace.get_tracer("http").start_as_current_span("GET"):
            return 200

    with record(tape), agent_run("a"):
        http_get("https://example.invalid/")
    names = [s.name for s in raw_spans(tape)]
    assert names == ["GET", "execute_tool http_get", "invoke_agent a"]


def assert_distinct_gap_free(path: Path, expected: int) -> None:
    seqs = sorted(s.attrs[A.SEQ] for s in steps_of(path))
    assert seqs == list(range(1, expected + 1))


def test_eight_threads_get_distinct_gap_free_seq(tape: Path) -> None:
    barrier = threading.Barrier(8)

    @tool(side_effect="read_only")
    def work(worker: int, i: int) -> int:
        return worker * 100 + i

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(25):
            work(n, i)

    with record(tape), agent_run("threads"):
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker, n)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert_distinct_gap_free(tape, 200)
    ids = {s.attrs[A.STEP_ID] for s in steps_of(tape)}
    assert len(ids) == 200


def test_asyncio_gather_of_fifty_calls_gets_distinct_seq(tape: Path) -> None:
    @tool(side_effect="read_only")
    async def lookup(n: int) -> int:
        await asyncio.sleep(0.001 * (50 - n) / 50)  # finish in reverse order
        return n

    async def main() -> list[int]:
        async with agent_run("gather"):
            return list(await asyncio.gather(*(lookup(n) for n in range(50))))

    with record(tape):
        assert asyncio.run(main()) == list(range(50))
    assert_distinct_gap_free(tape, 50)
    by_seq = {s.attrs[A.SEQ]: s.attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] for s in steps_of(tape)}
    assert by_seq[1] == '{"n":0}' and by_seq[50] == '{"n":49}'  # seq taken when each call starts


def test_thread_pool_without_context_joins_the_only_active_run(tape: Path) -> None:
    with record(tape), agent_run("pool") as run, ThreadPoolExecutor(4) as pool:
        assert list(pool.map(plain_tool, range(10))) == [n * 2 for n in range(10)]
    steps = steps_of(tape)
    assert_distinct_gap_free(tape, 10)
    root = run_span_of(tape)
    assert all(s.attrs[A.RUN_ID] == run.run_id and s.parent_span_id == root.span_id for s in steps)


def _react(turns: int) -> None:
    """A ReAct loop: each turn the model decides, then the tool it asked for runs."""
    with agent_run("react"):
        for turn in range(turns):
            summarise([{"role": "user", "content": f"turn {turn}"}])
            plain_tool(turn)
        summarise([{"role": "user", "content": "final answer"}])


def test_a_react_loop_keeps_model_steps_siblings_under_the_run(tape: Path) -> None:
    with record(tape):
        _react(4)
    steps = sorted((s.attrs for s in steps_of(tape)), key=lambda a: a[A.SEQ])
    models = [a for a in steps if a[A.KIND] == "llm"]
    tools = [a for a in steps if a[A.KIND] == "tool"]
    assert len(models) == 5 and len(tools) == 4
    assert all(a[A.PARENT_STEP_ID] == "" for a in models)  # never the previous turn's model step
    assert [a[A.PARENT_STEP_ID] for a in tools] == ["summarise#1", "summarise#2", "summarise#3", "summarise#4"]


def test_a_model_step_inside_a_step_has_its_enclosing_step_as_parent(tape: Path) -> None:
    @tool(side_effect="read_only")
    def planner(goal: str) -> dict[str, object]:
        return summarise([{"role": "user", "content": goal}])

    with record(tape), agent_run("a"):
        summarise([{"role": "user", "content": "x"}])
        planner("sub-goal")
    steps = {s.attrs[A.STEP_ID]: s.attrs for s in steps_of(tape)}
    assert steps["planner#1"][A.PARENT_STEP_ID] == "summarise#1"
    assert steps["planner#1/summarise#1"][A.PARENT_STEP_ID] == "planner#1"


def test_every_step_carries_its_side_effect(tape: Path) -> None:
    from helpers.sample_tools import fetch_doc

    with record(tape), agent_run("a"):
        fetch_doc("d-1")
        plain_tool(1)  # declares nothing
        summarise([{"role": "user", "content": "x"}])
        with pytest.raises(KeyError):
            explode("x")
    effects = {s.attrs[A.STEP_ID]: s.attrs[A.SIDE_EFFECT] for s in steps_of(tape)}
    assert effects == {
        "fetch_doc#1": "read_only",
        "plain_tool#1": "undeclared",  # spelled out, so an audit can search for it
        "summarise#1": "read_only",  # a model step reads unless it declares otherwise
        "explode#1": "write",
    }
