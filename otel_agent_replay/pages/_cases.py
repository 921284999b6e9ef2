"""The report page's per-case section: one row per case with its input, each side's pass rate and
interval, the p-value and the verdict, and two charts (cases per verdict, pass rate per case).

It renders ``store.CaseReport`` as it is (the rates and verdicts come from ``store._verdicts``).
A case's input is shown short (``input_text``: a lone string as that string), its whole text in the
cell's ``title`` (shown on hover) and in the chart's tooltip.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from otel_agent_replay.core import visible
from otel_agent_replay.store import CaseComparison, CaseRate, CaseReport

from ._html import chart_box, esc, tooltip_text

__all__ = ["case_section", "input_text"]

PALETTE: Final = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
INPUT_WIDTH: Final = 60
"""Characters of a case's input shown in its cell (the rest on hover)."""
MAX_CHARTED: Final = 60
"""Cases drawn in the pass-rate chart at most (the table holds them all)."""
_TITLE_LIMIT: Final = 2000
_VERDICT_COLOURS: Final = {
    "pass": "#59a14f", "fail": "#e15759", "flaky": "#edc948", "regressed": "#c0392b", "fixed": "#4e79a7",
    "unknown": "#9c9c9c", "error": "#b07aa1",
}  # fmt: skip


def input_text(raw: str | None) -> str:
    """What a case's recorded input says, for a person: a lone string (or an object's lone string
    value, ``{"task": "…"}``) as that string, anything else as its JSON text."""
    if not raw:
        return ""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    if isinstance(value, dict) and len(value) == 1:
        (value,) = value.values()
    return value if isinstance(value, str) else raw


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _version(version: str | None) -> str:
    return "(none)" if version is None else version


def _input_cell(rate: CaseRate) -> str:
    whole = visible(input_text(rate.input))  # first: escapes count in the width
    return f"<td class='input' title='{esc(whole[:_TITLE_LIMIT])}'>{esc(_short(whole, INPUT_WIDTH))}</td>"


def _rate_cell(rate: CaseRate) -> str:
    """``9/12 75% [47%, 91%]``, with the errors and divergences when there are some."""
    if rate.runs == 0:
        text = "no judged run"
        interval = ""
    else:
        text = f"{rate.passes}/{rate.runs} {_pct(rate.rate)}"
        interval = f" <span class='interval'>[{_pct(rate.low)}, {_pct(rate.high)}]</span>"
    extra = []
    if rate.errors:
        extra.append(f"{rate.errors} not judged")
    if rate.divergences:
        extra.append(f"{rate.divergences} divergence(s)")
    more = f"<div class='kind'>{esc(', '.join(extra))}</div>" if extra else ""
    return f"<td class='num rate' data-version='{esc(_version(rate.version))}'>{esc(text)}{interval}{more}</td>"


def _case_cell(case_id: str) -> str:
    return f"<th class='mono' title='{esc(case_id)}'>{esc(_short(case_id, 12))}</th>"


def _p(comparison: CaseComparison) -> str:
    return "–" if comparison.p_value is None else f"{comparison.p_value:.2g}"


def _compared_table(cases: CaseReport) -> str:
    assert cases.compared is not None
    base, cand = (esc(v) for v in cases.compared)
    rows = []
    for c in cases.comparisons:
        verdict = c.verdict.value
        rows.append(
            f"<tr class='verdict-{esc(verdict)}' data-case='{esc(c.case_id)}'>{_case_cell(c.case_id)}"
            f"{_input_cell(c.baseline if c.baseline.input else c.candidate)}"
            f"{_rate_cell(c.baseline)}{_rate_cell(c.candidate)}"
            f"<td class='num p-value'>{_p(c)}</td><td class='verdict'>{esc(verdict)}</td></tr>"
        )
    return (
        f"<table id='cases'><tr><th>case</th><th>input</th><th>{base}: passed, rate [interval]</th>"
        f"<th>{cand}: passed, rate [interval]</th><th>p-value</th><th>verdict</th></tr>{''.join(rows)}</table>"
    )


def _rates_table(cases: CaseReport) -> str:
    k = cases.rule.pass_k
    rows = "".join(
        f"<tr data-case='{esc(r.case_id)}'>{_case_cell(r.case_id)}{_input_cell(r)}"
        f"<td>{esc(_version(r.version))}</td>{_rate_cell(r)}<td class='num'>{_pct(r.pass_k)}</td></tr>"
        for r in cases.rates
    )
    return (
        f"<table id='cases'><tr><th>case</th><th>input</th><th>version</th><th>passed, rate [interval]</th>"
        f"<th>pass^{k}</th></tr>{rows}</table>"
    )


def _rate_chart(cases: CaseReport) -> dict[str, Any] | None:
    """Pass rate per case (%), one bar per version; the tooltip adds the interval and the runs."""
    versions: list[str | None] = list(cases.compared) if cases.compared is not None else []
    for r in cases.rates:
        if cases.compared is None and r.version not in versions:
            versions.append(r.version)
    by_case: dict[str, dict[str | None, CaseRate]] = {}
    for r in cases.rates:
        by_case.setdefault(r.case_id, {})[r.version] = r
    case_ids = sorted(by_case)[:MAX_CHARTED]
    if not any(r.rate for per in by_case.values() for r in per.values()):
        return None  # no run passed anywhere: the bars would all be empty
    labels, full = [], []
    for case_id in case_ids:
        rate = next(iter(by_case[case_id].values()))
        whole = input_text(rate.input) or case_id
        labels.append(whole)
        full.append(tooltip_text(whole))
    datasets, notes = [], []
    for i, version in enumerate(versions):
        values: list[float | None] = []
        lines: list[str] = []
        for case_id in case_ids:
            found = by_case[case_id].get(version)
            if found is None or found.rate is None:
                values.append(None)
                lines.append("")
                continue
            values.append(round(100 * found.rate, 1))
            lines.append(f"{found.passes}/{found.runs} passed, interval [{_pct(found.low)}, {_pct(found.high)}]")
        datasets.append({"label": _version(version), "data": values, "backgroundColor": PALETTE[i % len(PALETTE)]})
        notes.append(lines)
    title = "pass rate per case (%)" + (f", first {MAX_CHARTED} cases" if len(by_case) > MAX_CHARTED else "")
    return {
        "canvas": "chart-case-rates",
        "title": title,
        "labels": labels,
        "full": full,
        "notes": notes,
        "datasets": datasets,
        "scales": {"y": {"min": 0, "max": 100}},
    }


def _verdict_chart(cases: CaseReport) -> dict[str, Any] | None:
    counts = {v: n for v, n in sorted(cases.counts.items()) if n}
    if not counts:
        return None
    return {
        "canvas": "chart-verdicts",
        "title": "cases per verdict",
        "labels": list(counts),
        "datasets": [
            {
                "label": "cases",
                "data": list(counts.values()),
                "backgroundColor": [_VERDICT_COLOURS.get(v, PALETTE[0]) for v in counts],
            }
        ],
        "scales": {"y": {"beginAtZero": True, "ticks": {"precision": 0}}},
    }


def case_section(cases: CaseReport | None) -> tuple[str, list[dict[str, Any]]]:
    """The per-case section's HTML and its charts (for the page's ``charts``); nothing without cases."""
    if cases is None or not cases.rates:
        return "", []
    rule = cases.rule
    charts = [c for c in (_verdict_chart(cases), _rate_chart(cases)) if c is not None]
    boxes = "".join(chart_box(c["canvas"]) for c in charts)
    how = f"pass rate with its {100 * rule.confidence:g}% {cases.interval}"
    if cases.compared is not None:
        how += f"; {cases.test} at α = {rule.alpha:g}; unknown below {rule.min_runs} runs of a version"
        table = _compared_table(cases)
        heading = f"Verdicts per case: {esc(cases.compared[0])} → {esc(cases.compared[1])}"
    else:
        table = _rates_table(cases)
        heading = "Repeated runs per case"
    section = (
        f"<h2 id='per-case'>{heading}</h2><div class='sub'>{esc(how)}</div>"
        f"<div class='charts' id='case-charts'>{boxes}</div>{table}"
    )
    return section, charts
