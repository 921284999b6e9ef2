"""replay(on_miss="error_result"): a miss is answered out of bounds, counted, and the replay does not fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay import (
    DivergenceKind,
    MissPolicy,
    ReplayOptions,
    SideEffectRefused,
    TapeDrift,
    TapeMiss,
    agent_run,
    load_tape,
    record,
    replay,
    tool,
)
from otel_agent_replay.core import ConfigurationError
from otel_agent_replay.store import OUT_OF_BOUNDS

RAN: list[str] = []


@tool(side_effect="read_only")
def lookup(order_id: str) -> dict[str, Any]:
    RAN.append(f"lookup:{order_id}")
    return {"order_id": order_id, "status": "shipped"}


@tool(side_effect="external")
def notify(order_id: str) -> dict[str, Any]:
    RAN.append(f"notify:{order_id}")
    return {"sent": True}


@tool(side_effect="write")
def cancel(order_id: str) -> dict[str, Any]:
    RAN.append(f"cancel:{order_id}")
    return {"cancelled": order_id}


@tool(side_effect="read_only")
def weather(city: str) -> str:
    RAN.append(f"weather:{city}")
    return "sunny"


def agent(
    order_id: str, *, extra: bool = False, extra_notify: bool = False, other_lookup: bool = False, cancels: bool = False
) -> Any:
    with agent_run("orders") as run:
        found = lookup("o-other" if other_lookup else order_id)
        answers = [found]
        if cancels:
            answers.append(cancel(order_id))
        if extra:
            answers.append(weather("Lyon"))
            answers.append(lookup("o-2"))  # the second call of a tool recorded once: a miss, not drift
        notify(order_id)
        if extra_notify:
            answers.append(notify("o-9"))
        run.set_output(answers)
        return answers


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "orders.jsonl"
    with record(path):
        agent("o-1")
    RAN.clear()
    return path


def test_misses_of_any_tool_are_answered_with_the_error_result_and_counted(tape: Path, tmp_path: Path) -> None:
    replayed = tmp_path / "replayed.jsonl"
    with record(replayed), replay(tape, on_miss="error_result", side_effects="stub") as session:
        answers = agent("o-1", extra=True, extra_notify=True)
    assert answers[1] == {"error": OUT_OF_BOUNDS, "tool": "weather"}
    assert answers[2] == {"error": OUT_OF_BOUNDS, "tool": "lookup"}
    assert answers[3] == {"error": OUT_OF_BOUNDS, "tool": "notify"}
    assert RAN == [], "nothing ran: the read-only misses and the external tool were all answered from the replay"
    stats = session.stats
    assert stats.out_of_bounds_calls == 3
    assert stats["out_of_bounds_calls"] == 3
    assert "out_of_bounds_calls" in dict(stats)
    assert stats.hits == 2 and stats.misses == 3 and stats.drifts == 0
    assert session.out_of_bounds == ("weather", "lookup", "notify")
    kinds = [d.kind for d in session.report]
    assert kinds == [DivergenceKind.OUT_OF_BOUNDS] * 3
    assert "weather (call 1" in session.report[0].message
    # The answer is the step's result in the replay spans, so a recording of the replay has it.
    run = load_tape(replayed).runs[0]
    assert [s.tool for s in run.steps] == ["lookup", "weather", "lookup", "notify", "notify"]
    assert run.steps[1].result == {"error": OUT_OF_BOUNDS, "tool": "weather"}
    assert run.steps[4].result == {"error": OUT_OF_BOUNDS, "tool": "notify"}


def test_a_non_read_only_miss_is_answered_even_under_the_refuse_policy(tape: Path) -> None:
    with pytest.raises(SideEffectRefused), replay(tape, on_miss="error_result", allow_unused=True) as session:
        agent("o-1", cancels=True)  # cancel is not on the tape; the recorded notify is a hit
    assert [c.tool for c in session.view().calls] == ["lookup", "cancel"]
    assert session.view().calls[1].result == {"error": OUT_OF_BOUNDS, "tool": "cancel"}
    assert session.stats.out_of_bounds_calls == 1 and session.stats.refused_side_effects == 1
    assert session.out_of_bounds == ("cancel",)
    assert RAN == []


def test_drift_stays_drift(tape: Path) -> None:
    with pytest.raises(TapeDrift), replay(tape, on_miss="error_result", side_effects="stub"):
        agent("o-1", other_lookup=True)


def test_the_default_still_raises_on_a_miss(tape: Path) -> None:
    assert ReplayOptions().on_miss == MissPolicy.RAISE
    with pytest.raises(TapeMiss), replay(tape, side_effects="stub"):
        agent("o-1", extra=True)


def test_on_miss_is_an_option_of_replay_options(tape: Path) -> None:
    options = ReplayOptions(on_miss="error_result", side_effects="stub")
    assert options.on_miss is MissPolicy.ERROR_RESULT
    with replay(tape, options) as session:
        agent("o-1", extra=True)
    assert session.stats.out_of_bounds_calls == 2
    with pytest.raises(ConfigurationError, match="'raise', 'error_result'"):
        ReplayOptions(on_miss="ignore")  # type: ignore[arg-type]


def notify_other(order_id: str, other: str) -> Any:
    """The recorded agent, but its external tool is called with another argument (as a live model may)."""
    with agent_run("orders") as run:
        found = lookup(order_id)
        sent = notify(other)
        run.set_output([found, sent])
        return [found, sent]


def test_on_drift_count_answers_a_stubbed_tools_changed_argument_with_its_recorded_call(tape: Path) -> None:
    with replay(tape, on_miss="error_result", on_drift="count", side_effects="stub") as session:
        answers = notify_other("o-1", "o-7")
    assert answers[1] == {"sent": True}, "the recorded call at that position answered"
    assert RAN == [], "the external tool never ran"
    assert session.stats.drifts == 1 and session.stats.stubbed_side_effects == 1
    (drift,) = session.report
    assert drift.kind == DivergenceKind.DRIFT and drift.tool == "notify"
    assert "o-7" in drift.message and "never run" in drift.message


def test_on_drift_count_answers_a_read_only_tools_changed_argument_out_of_bounds(tape: Path) -> None:
    with replay(tape, on_miss="error_result", on_drift="count", side_effects="stub", allow_unused=True) as session:
        answers = agent("o-1", other_lookup=True)
    assert answers[0] == {"error": OUT_OF_BOUNDS, "tool": "lookup"}, "the tape has no lookup of o-other"
    assert RAN == []
    assert session.stats.drifts == 1 and session.stats.out_of_bounds_calls == 1
    kinds = [d.kind for d in session.report]
    assert kinds == [DivergenceKind.OUT_OF_BOUNDS, DivergenceKind.UNUSED], "the recorded lookup went unused"
    assert "other arguments than recorded" in session.report[0].message


def test_on_drift_count_uses_a_fallback_first_and_a_strict_miss_policy_keeps_drift(tape: Path) -> None:
    seen: list[str] = []

    def fake_notify(order_id: str) -> dict[str, Any]:
        seen.append(order_id)
        return {"sent": "fake"}

    fakes = {"notify": fake_notify}
    with replay(tape, on_drift="count", side_effects="stub", fallbacks=fakes, allow_unused=True) as session:
        assert notify_other("o-1", "o-7")[1] == {"sent": "fake"}
    assert seen == ["o-7"] and session.stats.fallback_calls == 1 and session.stats.drifts == 1
    with pytest.raises(TapeDrift), replay(tape, on_drift="count", side_effects="stub"):
        agent("o-1", other_lookup=True)  # a read-only tool under on_miss="raise": nothing may answer it
    with pytest.raises(ConfigurationError, match="'raise', 'count'"):
        ReplayOptions(on_drift="ignore")  # type: ignore[arg-type]
