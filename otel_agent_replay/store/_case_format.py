"""The per-case part of a report as JSON, Markdown and CSV: rates, intervals, pass^k, verdicts, spend."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from otel_agent_replay.core import visible

from ._verdicts import CaseComparison, CaseRate, CaseReport, CaseVerdict, VersionSpend

__all__ = ["case_csv", "case_dict", "case_markdown"]

_UNSAFE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f|`]")
_MARKS: Final = {
    CaseVerdict.PASS: "✅ pass",
    CaseVerdict.FAIL: "fail",
    CaseVerdict.FLAKY: "⚠️ flaky",
    CaseVerdict.REGRESSED: "❌ **regressed**",
    CaseVerdict.FIXED: "✅ **fixed**",
    CaseVerdict.UNKNOWN: "unknown",
    CaseVerdict.ERROR: "❗ **error** (not judged)",
}


def _rate_dict(r: CaseRate) -> dict[str, Any]:
    return {
        "version": r.version,
        "runs": r.runs,
        "passes": r.passes,
        "rate": r.rate,
        "interval": None if r.low is None else [r.low, r.high],
        "pass_k": r.pass_k,
        "failed_repetitions": list(r.failed_repetitions),
        "errors": r.errors,
        "divergences": r.divergences,
        "judge_errors": list(r.judge_errors),
    }


def _spend_dict(s: VersionSpend) -> dict[str, Any]:
    return {
        "version": s.version,
        "runs": s.runs,
        "tokens_in": s.tokens_in,
        "tokens_out": s.tokens_out,
        "cost_usd": s.cost,
        "unpriced_models": list(s.unpriced_models),
    }


def case_dict(report: CaseReport) -> dict[str, Any]:
    """The per-case report as plain JSON values."""
    rule = report.rule
    cases: dict[str, dict[str, Any]] = {}
    for r in report.rates:
        item = cases.setdefault(r.case_id, {"case": r.case_id, "agent_name": r.agent_name, "input": r.input})
        item.setdefault("versions", []).append(_rate_dict(r))
    for c in report.comparisons:
        item = cases.setdefault(c.case_id, {"case": c.case_id, "versions": []})
        item.update(verdict=c.verdict.value, p_value=c.p_value)
    return {
        "test": report.test,
        "alpha": rule.alpha,
        "interval": report.interval,
        "confidence": rule.confidence,
        "pass_k": rule.pass_k,
        "min_runs": rule.min_runs,
        "compare": None if report.compared is None else list(report.compared),
        "verdicts": dict(sorted(report.counts.items())),
        "cases": list(cases.values()),
        "spend": [_spend_dict(s) for s in report.spend],
    }


def _cell(text: object, limit: int = 48) -> str:
    value = visible(_UNSAFE.sub(" ", str(text)))  # and a bidirectional control shown as its escape
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _rate_cells(r: CaseRate) -> list[str]:
    if r.runs == 0:
        return ["0", "–", "–"]
    return [f"{r.passes}/{r.runs}", f"{_pct(r.rate)} [{_pct(r.low)}, {_pct(r.high)}]", _pct(r.pass_k)]


def _label(version: str | None) -> str:
    return "(none)" if version is None else _cell(version, 40)


def _spend_lines(report: CaseReport) -> list[str]:
    lines = ["", "| version | runs | tokens in | tokens out | cost |", "|---|---|---|---|---|"]
    for s in report.spend:
        cost = "unknown" if s.cost is None else f"${s.cost:.4f}"
        if s.cost is not None and s.unpriced_models:
            cost += f" (no price for {_cell(', '.join(s.unpriced_models), 60)})"
        lines.append(f"| `{_label(s.version)}` | {s.runs:,} | {s.tokens_in:,} | {s.tokens_out:,} | {cost} |")
    return lines


def _compared_lines(report: CaseReport, comparisons: tuple[CaseComparison, ...]) -> list[str]:
    assert report.compared is not None
    base, cand = (_label(v) for v in report.compared)
    k = report.rule.pass_k
    lines = [
        f"| case | `{base}` passed | `{base}` rate | `{base}` pass^{k} | `{cand}` passed | `{cand}` rate | "
        f"`{cand}` pass^{k} | p | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        name = c.baseline.input or c.candidate.input or ""
        p = "–" if c.p_value is None else f"{c.p_value:.2g}"
        cells = [f"`{_cell(c.case_id, 24)}` {_cell(name)}", *_rate_cells(c.baseline), *_rate_cells(c.candidate)]
        lines.append("| " + " | ".join([*cells, p, _MARKS[c.verdict]]) + " |")
    return lines


def case_markdown(report: CaseReport) -> list[str]:
    """The per-case section of the Markdown report, as lines."""
    rule = report.rule
    lines = [
        f"#### Repeated runs per case: pass rate [{100 * rule.confidence:g}% {report.interval}], pass^{rule.pass_k}",
        "",
    ]
    if report.compared is not None:
        counts = ", ".join(f"{n} {v}" for v, n in sorted(report.counts.items())) or "no cases"
        lines += [
            f"Verdicts: {counts} ({report.test} at α = {rule.alpha:g}; unknown below {rule.min_runs} runs "
            "of a version).",
            "",
            *_compared_lines(report, report.comparisons),
        ]
    else:
        lines += ["| case | version | passed | rate | pass^k | failed repetitions |", "|---|---|---|---|---|---|"]
        for r in report.rates:
            failed = ", ".join(str(n) for n in r.failed_repetitions) or "–"
            name = f"`{_cell(r.case_id, 24)}` {_cell(r.input or '')}"
            lines.append(f"| {name} | `{_label(r.version)}` | " + " | ".join([*_rate_cells(r), _cell(failed)]) + " |")
    return [*lines, *_spend_lines(report)]


def _plain(value: float | None) -> str:
    return "" if value is None else repr(round(value, 6))


def case_csv(report: CaseReport, writer: Any, text: Callable[[str], str] = str) -> None:
    """The per-case table, one row per case and version (with the case's verdict when compared); ``text``
    makes stored text a safe cell (the report's formula guard)."""
    writer.writerow(
        ["case", "version", "runs", "passes", "rate", "low", "high", f"pass^{report.rule.pass_k}", "p_value", "verdict"]
    )
    verdicts = {c.case_id: c for c in report.comparisons}
    for r in report.rates:
        c = verdicts.get(r.case_id) if report.compared is not None and r.version in report.compared else None
        writer.writerow(
            [
                text(r.case_id), "" if r.version is None else text(r.version), r.runs, r.passes, _plain(r.rate),
                _plain(r.low), _plain(r.high), _plain(r.pass_k), "" if c is None else _plain(c.p_value),
                "" if c is None else c.verdict.value,
            ]
        )  # fmt: skip
