"""Runs: a live run replays the recorded run of the same agent (then the same input), whatever the order."""

from __future__ import annotations

import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from otel_agent_replay import TapeMiss, UnknownAgent, agent_run, load_tape, record, replay, tool

CALLS: list[str] = []


@tool(side_effect="read_only")
def search(query: str) -> list[str]:
    CALLS.append(query)
    return [f"{query}-1", f"{query}-2"]


def planner(topic: str) -> list[str]:
    with agent_run("planner", input={"topic": topic}):
        return search(f"plan {topic}")


def writer(topic: str) -> list[str]:
    with agent_run("writer", input={"topic": topic}):
        return search(f"write {topic}") + search("style guide")


def test_a_tape_of_two_agents_replays_each_against_its_own_runs_in_either_order(tape: Path) -> None:
    with record(tape):
        live = [planner("cats"), writer("cats")]
    assert [r.agent_name for r in load_tape(tape).runs] == ["planner", "writer"]
    CALLS.clear()
    with replay(tape) as session:
        offline = [writer("cats"), planner("cats")]  # the other order
    assert offline == live[::-1] and CALLS == []
    assert session.stats.hits == 3 and session.stats.misses == 0 and session.stats.unused == 0


def test_runs_of_one_agent_bind_by_input_hash(tape: Path) -> None:
    with record(tape):
        cats, dogs = planner("cats"), planner("dogs")
    with replay(tape) as session:
        assert planner("dogs") == dogs  # the second recorded run, chosen by its input
        assert planner("cats") == cats
    assert session.stats.hits == 2 and not session.report


def test_an_agent_the_tape_does_not_have_fails_naming_the_agents_it_has(tape: Path) -> None:
    with record(tape):
        planner("cats")
        writer("cats")
    with pytest.raises(UnknownAgent) as caught, replay(tape, allow_unused=True), agent_run("reviewer"):
        pass
    message = str(caught.value)
    assert "agent_run('reviewer')" in message
    assert "'planner' (1 run)" in message and "'writer' (1 run)" in message and "record" in message
    assert isinstance(caught.value, AssertionError)


def test_one_run_more_than_recorded_is_a_run_count_divergence(tape: Path) -> None:
    with record(tape):
        planner("cats")
    with pytest.raises(TapeMiss), replay(tape) as session:
        planner("cats")
        with pytest.raises(TapeMiss):
            planner("cats")
    assert [d.kind.value for d in session.report][:1] == ["run_count"]


def test_concurrent_calls_of_one_tool_replay_by_arguments_whatever_order_they_start_in(tape: Path) -> None:
    queries = ["alpha", "beta", "gamma", "delta"]
    with record(tape), agent_run("a"):
        live = {q: search(q) for q in queries}
    CALLS.clear()
    started: list[str] = []
    lock = threading.Lock()

    def call(q: str) -> list[str]:
        with lock:
            started.append(q)
        return search(q)

    with replay(tape) as session, agent_run("a"), ThreadPoolExecutor(4) as pool:
        futures = {q: pool.submit(contextvars.copy_context().run, call, q) for q in reversed(queries)}
        offline = {q: f.result() for q, f in futures.items()}
    assert offline == live and CALLS == []
    assert session.stats.hits == 4 and session.stats.drifts == 0
