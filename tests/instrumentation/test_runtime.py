"""Run state: seq under a lock, step ids by position in scope, the active-run fallback."""

from __future__ import annotations

import threading

from opentelemetry.trace import INVALID_SPAN

from otel_agent_replay.capture._pipeline import DEFAULT_CAPTURE
from otel_agent_replay.instrumentation._runtime import (
    RunState,
    active_run,
    current_run,
    run_ended,
    run_started,
)


def _run(run_id: str = "r") -> RunState:
    return RunState(run_id, "agent", INVALID_SPAN, DEFAULT_CAPTURE, None)


def test_step_ids_count_per_tool_and_scope() -> None:
    run = _run()
    a1 = run.next_step("a", None)
    b1 = run.next_step("b", None)
    a2 = run.next_step("a", None)
    inner = run.next_step("a", a2.step_id)
    assert [a1.seq, b1.seq, a2.seq, inner.seq] == [1, 2, 3, 4]
    assert [a1.step_id, b1.step_id, a2.step_id] == ["a#1", "b#1", "a#2"]
    assert inner.step_id == "a#2/a#1" and inner.parent_step_id == "a#2"


def test_parent_is_the_last_finished_model_step() -> None:
    run = _run()
    assert run.next_step("t", None).parent_step_id == ""
    run.model_step_done("llm#1")
    assert run.next_step("t", None).parent_step_id == "llm#1"
    assert run.next_step("llm", None, model=True).parent_step_id == ""  # model steps are siblings
    assert run.next_step("llm", "t#2", model=True).parent_step_id == "t#2"  # unless they nest


def test_seq_is_gap_free_under_threads() -> None:
    run = _run()
    seqs: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        for _ in range(500):
            ids = run.next_step("t", None)
            with lock:
                seqs.append(ids.seq)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seqs) == list(range(1, 4001))
    assert run.steps_started == 4000


def test_active_run_prefers_the_context_then_the_only_run() -> None:
    assert active_run() is None
    first, second = _run("1"), _run("2")
    run_started(first)
    try:
        assert active_run() is first  # the only run in the process
        run_started(second)
        assert active_run() is None  # two runs: no guessing
        token = current_run.set(second)
        assert active_run() is second
        current_run.reset(token)
    finally:
        run_ended(first)
        run_ended(second)
    assert active_run() is None
