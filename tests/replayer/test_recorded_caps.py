"""The size caps a tape was recorded with apply at replay too: no spurious drift for long arguments."""

from __future__ import annotations

from pathlib import Path

from otel_agent_replay import agent_run, load_tape, record, replay, tool
from otel_agent_replay.core import attributes as A


@tool(side_effect="read_only")
def summarise(text: str, style: str = "short") -> str:
    return text[:10]


def test_a_tape_recorded_with_max_string_replays_long_arguments_without_drift(tmp_path: Path) -> None:
    tape = tmp_path / "caps.jsonl"
    long_text = "word " * 40  # 200 characters, over max_string=64
    with record(tape, max_string=64), agent_run("a"):
        summarise(long_text)
        summarise("short one")
    (run,) = load_tape(tape).runs
    assert run.attributes[A.MAX_STRING] == 64
    assert "truncated" in run.steps[0].args_json  # the recorded argument was shortened
    with replay(tape) as session, agent_run("a"):
        assert summarise(long_text) == long_text[:10]
        assert summarise("short one") == "short one"
    assert session.stats["tape_hits"] == 2 and session.stats["drift_events"] == 0
    # outside any agent_run too (the implicit run)
    with replay(tape) as implicit:
        summarise(long_text)
        summarise("short one")
    assert implicit.stats["tape_hits"] == 2


def test_default_caps_are_not_written(tmp_path: Path) -> None:
    tape = tmp_path / "plain.jsonl"
    with record(tape), agent_run("a"):
        summarise("x")
    assert A.MAX_STRING not in load_tape(tape).runs[0].attributes
