"""The replay ledger: counters, divergences, raised errors, served calls."""

from __future__ import annotations

import pytest

from otel_agent_replay import TapeMiss, tool
from otel_agent_replay.instrumentation import tool_spec
from otel_agent_replay.replayer._ledger import STAT_KEYS, Ledger


@tool(side_effect="write")
def save(x: int) -> int:
    return x


def test_counts_reports_and_raises() -> None:
    ledger = Ledger()
    ledger.bump("steps", "tape_hits")
    ledger.bump("steps")
    stats = ledger.stats("none")
    assert stats["mode"] == "none" and stats["steps"] == 2 and stats["tape_hits"] == 1
    assert set(stats) == {"mode", *STAT_KEYS}
    with pytest.raises(TypeError):
        stats["steps"] = 9  # type: ignore[index]  # a read-only snapshot
    with pytest.raises(TapeMiss):
        ledger.fail(TapeMiss("not on the tape"), "run-1", "search", 2, 5)
    (entry,) = ledger.report()
    assert (entry.kind, entry.run_id, entry.tool, entry.position, entry.seq) == ("miss", "run-1", "search", 2, 5)
    assert len(ledger.raised) == 1


def test_recorded_calls_count_side_effects_and_build_a_view() -> None:
    ledger = Ledger()
    spec = tool_spec(save)
    assert spec is not None
    assert ledger.count_recorded(spec, read_only=False) == 1
    assert ledger.stats("record")["real_side_effects"] == 1
    ledger.remember(spec, 1, {"x": 1}, 1, None)
    ledger.add_output("done")
    view = ledger.view("test")
    assert view.tools_called == ["save"] and view.final_output == "done"
