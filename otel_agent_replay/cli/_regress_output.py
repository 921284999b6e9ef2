"""What ``regress`` prints: a result as JSON, and as lines per case (or per case of repeated runs).

Text from the cases (agent versions, session ids, errors, judges' explanations) is data: it is made
visible (``core.visible``) and escaped for rich's markup before it is printed."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from otel_agent_replay.core import visible
from otel_agent_replay.regression import RegressResult

__all__ = ["case_json", "print_cases", "result_json"]


def case_json(result: RegressResult) -> list[dict[str, Any]]:
    return [
        {
            "recorded_session": c.recorded_session,
            "tape": c.tape,
            "session_id": c.session_id,
            "status": c.status,
            "passed": c.passed,
            "outcome": c.outcome,
            "divergences": c.divergences,
            "drift": c.drift,
            "out_of_bounds": list(c.out_of_bounds),
            "error": c.error,
            "problems": list(c.problems),
            "repetition": c.repetition,
            "evaluations": [
                {"metric": e.metric, "score": e.score, "passed": e.passed, "explanation": e.explanation}
                for e in c.evaluations
            ],
        }
        for c in result.cases
    ]


def result_json(result: RegressResult, baseline: str | None) -> dict[str, Any]:
    return {
        "agent_version": result.agent_version,
        "baseline": baseline,
        "criteria_version": result.criteria_version,
        "repeat": result.repeat,
        "shard": None if result.shard is None else f"{result.shard[0]}/{result.shard[1]}",
        "out_of_bounds_calls": result.out_of_bounds_calls,
        "runs": {"passed": len(result.passed), "failed": len(result.failed), "error": len(result.errored)},
        "divergences": result.divergences,
        "by_case": [
            {
                "recorded_session": c.recorded_session,
                "runs": c.runs,
                "passes": c.passes,
                "fails": c.fails,
                "errors": c.errors,
                "divergences": c.divergences,
                "failed_repetitions": list(c.failed_repetitions),
                "errored_repetitions": list(c.errored_repetitions),
            }
            for c in result.by_case()
        ],
        "cases": case_json(result),
    }


def _tally(result: RegressResult) -> str:
    """``8 passed, 3 failed, 1 error (a judge could not judge)`` of a regress call's runs."""
    text = f"{len(result.passed)} passed, {len(result.failed)} failed"
    if result.errored:
        text += f", [red]{len(result.errored)} error[/red] (not judged)"
    return text


def _divergences(result: RegressResult) -> str:
    drift = sum(c.drift for c in result.cases)
    return (
        f"{result.out_of_bounds_calls} out-of-bounds call(s), {drift} drifted call(s) "
        f"({result.divergences} divergence(s) answered and counted)"
    )


def _print_problems(result: RegressResult, out: Console) -> None:
    """The first lines of what went wrong, each once: the agent's errors, then the judges'."""
    seen = sorted({c.error.splitlines()[0] for c in result.cases if c.error})[:5]
    for text in seen:
        out.print(f"      [yellow]{escape(visible(text, newlines=False))}[/yellow]")
    for problem in sorted({p for c in result.cases for p in c.problems})[:5]:
        out.print(f"      [red]error:[/red] {escape(visible(problem, newlines=False))}")


def _print_repeated(result: RegressResult, out: Console) -> None:
    per_case = result.by_case()
    runs = sum(c.runs for c in per_case)
    shard = f" (shard {result.shard[0]}/{result.shard[1]})" if result.shard else ""
    out.print(
        f"[bold]regress[/bold] {escape(visible(result.agent_version))} on {len(per_case)} recorded session(s)"
        f"{shard}, {result.repeat} run(s) each: of {runs} run(s) {_tally(result)}; {_divergences(result)}"
    )
    for c in per_case:
        if c.errors:
            mark = "[red]error[/red]"
        elif c.passes == c.runs:
            mark = "[green]pass[/green]"
        else:
            mark = "[yellow]some[/yellow]" if c.passes else "[red]fail[/red]"
        failed = f"  failed repetitions: {', '.join(map(str, c.failed_repetitions))}" if c.failed_repetitions else ""
        errored = f"  not judged: {', '.join(map(str, c.errored_repetitions))}" if c.errored_repetitions else ""
        out.print(
            f"  {mark} {escape(visible(c.recorded_session))}: {c.passes}/{c.runs} passed, {c.errors} error, "
            f"{c.divergences} divergence(s){failed}{errored}"
        )
    _print_problems(result, out)


def print_cases(result: RegressResult, out: Console) -> None:
    if result.repeat > 1:
        _print_repeated(result, out)
        return
    baseline = f" (baseline {escape(visible(result.baseline))})" if result.baseline else ""
    out.print(
        f"[bold]regress[/bold] {escape(visible(result.agent_version))} on {len(result.cases)} recorded session(s)"
        f"{baseline}: {_tally(result)}, {_divergences(result)}"
    )
    for c in result.cases:
        mark = {"pass": "[green]pass[/green]", "fail": "[red]fail[/red]", "error": "[red]error[/red]"}[c.outcome]
        oob = f"  out of bounds: {escape(visible(', '.join(c.out_of_bounds)))}" if c.out_of_bounds else ""
        drift = f"  {c.divergences} divergence(s)" if c.divergences else ""
        session = escape(visible(c.session_id or "-"))
        out.print(f"  {mark} {escape(visible(c.recorded_session))} → {session} ({c.status}){drift}{oob}")
        for e in c.evaluations:
            if e.passed is False:
                why = visible(e.explanation or "failed", newlines=False)
                out.print(f"      {escape(visible(e.metric))}: {escape(why)}")
        if c.error:
            out.print(f"      [yellow]{escape(visible(c.error.splitlines()[0]))}[/yellow]")
        for problem in c.problems:
            out.print(f"      [red]error:[/red] {escape(visible(problem, newlines=False))}")
