"""The built-in evaluators and evaluate(): rules over a RunView, stamping, and broken judges."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from otel_agent_replay import ConfigurationError, Evaluation, RunView, agent_run, record, tool
from otel_agent_replay.regression import (
    evaluate,
    no_out_of_bounds,
    output_matches_schema,
    required_keys,
    tool_success,
)
from otel_agent_replay.store import OUT_OF_BOUNDS


@tool(side_effect="read_only")
def fetch(key: str) -> Any:
    if key == "boom":
        raise KeyError(key)
    if key == "oob":
        return {"error": OUT_OF_BOUNDS, "tool": "fetch"}
    return {"key": key}


def view_of(tmp_path: Path, keys: list[str], output: Any) -> RunView:
    tape = tmp_path / f"{'-'.join(keys) or 'none'}.jsonl"
    with record(tape), agent_run("judged") as run:
        for key in keys:
            with contextlib.suppress(KeyError):
                fetch(key)
        run.set_output(output)
    return RunView(tape)


def test_tool_success_counts_exceptions_and_error_answers(tmp_path: Path) -> None:
    view = view_of(tmp_path, ["a", "boom", "oob", "b"], {"answer": "x"})
    (ev,) = evaluate(view, [tool_success()])[0]
    assert ev.metric == "tool_success" and ev.score == 0.5 and ev.passed is False
    assert "2 of 4 tool call(s) failed: fetch (seq 2): KeyError" in (ev.explanation or "")
    assert "fetch (seq 3): unexpected_tool_call" in (ev.explanation or "")
    assert tool_success(min_rate=0.5)(view).passed is True  # type: ignore[union-attr]
    assert tool_success()(view_of(tmp_path, [], None)).score == 1.0  # type: ignore[union-attr]
    with pytest.raises(ConfigurationError):
        tool_success(min_rate=2)


def test_no_out_of_bounds_names_the_tools(tmp_path: Path) -> None:
    ev = no_out_of_bounds()(view_of(tmp_path, ["oob", "a", "oob"], None))
    assert isinstance(ev, Evaluation)
    assert ev.passed is False and ev.score == 2.0 and ev.explanation == "out-of-bounds call(s): fetch, fetch"
    clean = no_out_of_bounds()(view_of(tmp_path, ["a"], None))
    assert isinstance(clean, Evaluation) and clean.passed is True and clean.score == 0.0


def test_output_matches_schema_and_required_keys(tmp_path: Path) -> None:
    schema = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}
    good = view_of(tmp_path, ["a"], {"answer": "yes", "meta": {"id": 3}})
    bad = view_of(tmp_path, ["b"], {"answer": 3})
    check = output_matches_schema(schema)
    assert check(good) == Evaluation("output_schema", 1.0, True, explanation="the output matches the schema")
    failed = check(bad)
    assert isinstance(failed, Evaluation) and failed.passed is False
    assert "$.answer: 3 is not of type 'string'" in (failed.explanation or "")
    with pytest.raises(ConfigurationError, match="schema is not valid"):
        output_matches_schema({"type": "no-such-type"})
    keys = required_keys("answer", "meta.id", "meta.source")
    ev = keys(good)
    assert isinstance(ev, Evaluation)
    assert (
        ev.passed is False
        and ev.score == pytest.approx(2 / 3)
        and ev.explanation == "missing from the output: meta.source"
    )
    with pytest.raises(ConfigurationError):
        required_keys()


def test_evaluate_stamps_criteria_and_judge_and_reports_broken_evaluators(tmp_path: Path) -> None:
    view = view_of(tmp_path, ["a"], {"answer": "x"})

    def judge(v: RunView) -> list[Evaluation]:
        return [Evaluation("helpful", passed=True), Evaluation("kind", passed=True, criteria_version="own")]

    judge.judge_model = "gpt-judge"  # type: ignore[attr-defined]

    def broken(v: RunView) -> Evaluation:
        raise ValueError("no answer")

    def wrong(v: RunView) -> Any:
        return ["not an evaluation"]

    evaluations, problems = evaluate(view, [judge, broken, wrong, tool_success()], criteria_version="c7")
    assert [(e.metric, e.judge_model, e.criteria_version) for e in evaluations] == [
        ("helpful", "gpt-judge", "c7"),
        ("kind", "gpt-judge", "own"),
        ("tool_success", None, "c7"),
    ]
    assert problems == [
        "evaluator broken raised ValueError: no answer",
        "evaluator wrong returned 'not an evaluation', not an Evaluation",
    ]


def test_a_judge_that_returns_nothing_or_no_verdict_is_a_problem_never_a_pass(tmp_path: Path) -> None:
    view = view_of(tmp_path, ["a"], {"answer": "x"})
    answers: dict[str, Any] = {
        "none": None,
        "empty": [],
        "text": "pass",
        "mapping": {"passed": True},
        "number": 1,
        "blank": Evaluation("blank"),
    }
    judges = []
    for name, answer in answers.items():

        def judge(v: RunView, answer: Any = answer) -> Any:
            return answer

        judge.__name__ = name
        judges.append(judge)
    evaluations, problems = evaluate(view, judges)
    assert evaluations == []
    assert problems == [
        "evaluator none returned None, not an Evaluation",
        "evaluator empty returned no evaluation",
        "evaluator text returned 'pass', not an Evaluation",
        "evaluator mapping returned {'passed': True}, not an Evaluation",
        "evaluator number returned 1, not an Evaluation",
        "evaluator blank returned 'blank' with neither passed nor score",
    ]
