"""``report --format html``: the evidence store's report as one page, metrics per version as charts.

A metric is charted when some group has a value other than zero: a chart of nothing but missing or
zero values would be an empty frame, so those metrics are named under the charts instead (their
values stay in the table). The per-case section (``_cases``) follows the comparison.
"""

from __future__ import annotations

from typing import Any

from otel_agent_replay.store import METRICS, EvidenceReport

from ._cases import PALETTE, case_section
from ._html import chart_box, esc, page

_LABELS = {
    "sessions": "sessions",
    "tool_success_rate": "tool success rate",
    "latency_ms_avg": "latency, mean (ms)",
    "latency_ms_max": "latency, max (ms)",
    "retry_rate": "retry rate",
    "out_of_bounds_calls": "out-of-bounds calls",
    "pass_rate": "pass rate",
    "tokens_in": "tokens in",
    "tokens_out": "tokens out",
}
_COUNTS = frozenset({"sessions", "out_of_bounds_calls", "tokens_in", "tokens_out"})
"""Metrics that count: their axis has whole numbers only."""


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def report_page(report: EvidenceReport) -> str:
    """The report as one self-contained HTML page: a chart per metric that has data (one bar per
    group), the table, the comparison of two versions when one was asked for, and the per-case rows
    (input, each side's pass rate with its interval, p-value, verdict) when the store has repeated runs."""
    versions = [row.group if row.group is not None else "(none)" for row in report.rows]
    charts: list[dict[str, Any]] = []
    boxes = []
    empty = []
    for metric in METRICS:
        values = [row.metric(metric) for row in report.rows]
        if not any(values):
            empty.append(_LABELS.get(metric, metric))
            continue
        canvas = f"chart-{metric}"
        boxes.append(chart_box(canvas))
        colours = [PALETTE[i % len(PALETTE)] for i in range(len(versions))]
        charts.append(
            {
                "canvas": canvas,
                "title": _LABELS.get(metric, metric),
                "labels": versions,
                "datasets": [{"label": metric, "data": values, "backgroundColor": colours}],
                "scales": {"y": {"beginAtZero": True, "ticks": {"precision": 0 if metric in _COUNTS else 3}}},
            }
        )
    head = "".join(f"<th>{esc(_LABELS.get(m, m))}</th>" for m in METRICS)
    rows = "".join(
        f"<tr data-version='{esc(v)}'><th>{esc(v)}</th>"
        + "".join(f"<td class='num'>{_number(row.metric(m))}</td>" for m in METRICS)
        + "</tr>"
        for v, row in zip(versions, report.rows, strict=True)
    )
    uncharted = ""
    if empty:
        uncharted = f"<div class='sub' id='uncharted'>not charted (no value above zero): {esc(', '.join(empty))}</div>"
    body = [
        f"<h2>Metrics per {esc(report.by)}</h2><div class='charts' id='metric-charts'>{''.join(boxes)}</div>",
        uncharted,
        f"<table id='metrics'><tr><th>{esc(report.by)}</th>{head}</tr>{rows}</table>",
    ]
    if report.comparison is not None:
        c = report.comparison
        lines = "".join(
            f"<tr class='{'differs' if d.regressed else ''}'><th>{esc(_LABELS.get(d.metric, d.metric))}</th>"
            f"<td class='num'>{_number(d.baseline)}</td><td class='num'>{_number(d.candidate)}</td>"
            f"<td>{esc(d.change)}</td><td>{esc(d.threshold or '')}</td>"
            f"<td>{'regressed' if d.regressed else ''}</td></tr>"
            for d in c.deltas
        )
        body.append(
            f"<h2 id='comparison'>{esc(report.headline() or '')}</h2>"
            f"<table><tr><th>metric</th><th>{esc(c.baseline)}</th><th>{esc(c.candidate)}</th><th>change</th>"
            f"<th>threshold</th><th></th></tr>{lines}</table>"
        )
    section, case_charts = case_section(report.cases)
    if section:
        body.append(section)
        charts.extend(case_charts)
    subtitle = f"{len(report.rows)} group(s) by {report.by}, {sum(r.sessions for r in report.rows)} session(s)"
    return page("Agent evidence report", subtitle, "\n".join(body), {"versions": versions, "charts": charts})
