"""A replay leaves no garbage for the collector, and holds a large tape still while it runs (``_heap``)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from otel_agent_replay import ReplayWarning, agent_run, load_tape, record, replay, tool
from otel_agent_replay.replayer import _heap


@tool(side_effect="read_only")
def lookup(sku: str) -> dict[str, str]:
    return {"sku": sku, "name": f"item {sku}"}


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    with record(path), agent_run("a"):
        for n in range(20):
            lookup(f"s{n}")
    return path


def test_a_finished_replay_is_freed_by_reference_counting(tape: Path) -> None:
    """Its session (with its index and its report of unused steps) is in no reference cycle: dropping it
    frees it at once, not at a full collection in some later replay."""
    loaded = load_tape(tape)
    gc.collect()
    gc.disable()
    try:
        with replay(loaded, allow_unused=True) as session, agent_run("a"):
            lookup("s3")
        assert len(session.report) == 19  # the unused steps are reported
        gone = weakref.ref(session)
        del session
        assert gone() is None
    finally:
        gc.enable()


def test_a_large_tape_is_held_still_while_it_is_replayed(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_heap, "LARGE_TAPE_STEPS", 20)  # the tape's 20 steps count as large
    loaded = load_tape(tape)
    gc.collect()
    assert gc.get_freeze_count() == 0
    with replay(loaded, allow_unused=True), agent_run("a"):
        assert gc.get_freeze_count() > 0  # the tape (and what existed before) is not walked by collections
        with pytest.warns(ReplayWarning, match="still active"), replay(loaded, allow_unused=True), agent_run("a"):
            lookup("s1")
        assert gc.get_freeze_count() > 0  # the inner replay's end does not unfreeze the outer one's heap
        lookup("s2")
    assert gc.get_freeze_count() == 0  # handed back when the last one ends
    monkeypatch.setattr(_heap, "LARGE_TAPE_STEPS", 21)
    with replay(loaded, allow_unused=True), agent_run("a"):
        assert gc.get_freeze_count() == 0  # a small tape: nothing frozen


def test_a_replay_that_fails_at_its_end_still_unfreezes(tape: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_heap, "LARGE_TAPE_STEPS", 1)
    with pytest.raises(Exception, match="never called"), replay(tape), agent_run("a"):
        lookup("s1")
    assert gc.get_freeze_count() == 0
