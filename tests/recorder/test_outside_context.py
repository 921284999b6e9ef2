"""Runs started in threads that did not receive the record() context are not lost."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest

from otel_agent_replay import RecordingWarning, agent_run, load_tape, record, tool


@tool(side_effect="read_only")
def fetch(n: int) -> int:
    return n * 2


def _worker(who: str, runs: int) -> None:
    for r in range(runs):
        with agent_run("worker", run_id=f"{who}-{r}"):
            fetch(r)
            fetch(r + 1)


def test_runs_in_threads_without_the_context_join_the_only_recording(tmp_path: Path) -> None:
    tape = tmp_path / "threads.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with record(tape):
            threads = [threading.Thread(target=_worker, args=(f"t{i}", 5)) for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    loaded = load_tape(tape)
    assert len(loaded.runs) == 20
    assert all(len(run.steps) == 2 for run in loaded.runs)
    assert {run.run_id for run in loaded.runs} == {f"t{i}-{r}" for i in range(4) for r in range(5)}


def test_with_two_recordings_a_run_outside_both_warns_once_with_the_fix(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    entered, leave = threading.Barrier(2), threading.Event()

    def other_recording() -> None:
        with record(b):
            entered.wait(10)
            leave.wait(10)

    holder = threading.Thread(target=other_recording)
    holder.start()
    try:
        with record(a):
            entered.wait(10)
            with pytest.warns(RecordingWarning, match=r"2 recordings are active.*copy_context") as seen:
                orphan = threading.Thread(target=_worker, args=("x", 3))  # three runs, six steps: one warning
                orphan.start()
                orphan.join()
    finally:
        leave.set()
        holder.join()
    outside = [
        w for w in seen if issubclass(w.category, RecordingWarning) and "recordings are active" in str(w.message)
    ]
    assert len(outside) == 1
