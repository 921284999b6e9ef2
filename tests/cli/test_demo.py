"""The demo: record the four-step chain, then replay it as recorded, with drift, a miss and an override."""

from __future__ import annotations

from pathlib import Path

from otel_agent_replay import load_tape
from otel_agent_replay.cli._demo import run_demo


def test_the_demo_passes_show_each_outcome(tmp_path: Path) -> None:
    passes = {p.name: p for p in run_demo(tmp_path)}
    replayed = passes["replay"]
    assert "result equal to the recording: True" in replayed.summary
    assert "report file rewritten: False" in replayed.summary
    assert replayed.stats["live_tool_calls"] == 0 and replayed.stats["real_side_effects"] == 0
    assert replayed.stats["tape_hits"] == 4 and replayed.stats["stubbed_side_effects"] == 1

    drift = passes["drift"]
    assert drift.error is not None and "max_words: 120 → 80" in drift.error
    assert drift.stats["drift_events"] == 1 and drift.stats["live_tool_calls"] == 0

    strict_miss = passes["miss (strict)"]
    assert strict_miss.error is not None and strict_miss.error.startswith("miss in run")
    assert strict_miss.stats["tape_misses"] == 1 and strict_miss.stats["live_tool_calls"] == 0

    episodes = passes["miss (new_episodes)"]
    assert episodes.error is None
    assert episodes.stats["live_tool_calls"] == 1 and episodes.stats["real_side_effects"] == 0
    assert passes["replay (strict) of the appended tape"].stats["tape_hits"] == 5
    (run,) = load_tape(tmp_path / "tapes" / "demo-new-episodes.jsonl").runs
    assert [s.tool for s in run.steps][-1] == "search_index" and run.steps[-1].args["query"] == "carrier contract"

    override = passes["override"]
    assert "upstream returned 500" in override.summary and "no report written: True" in override.summary
    assert override.stats["overrides_applied"] == 1 and override.stats["real_side_effects"] == 0
    assert not (tmp_path / "report.md").exists()
