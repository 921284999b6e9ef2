"""``report --format html``: the evidence store's report as one page, metrics per version as charts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from otel_agent_replay.store import METRICS, EvidenceReport

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
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def verdict_matrix(verdicts: Mapping[str, Mapping[str, str]] | None) -> tuple[str, dict[str, Any] | None]:
    """LEAD: THE HOOK FOR THE PER-CASE VERDICT MATRIX (issue 26, "Repetitions and verdicts").

    Give it ``{case: {"baseline": "pass", "candidate": "regressed", "verdict": "regressed", ...}}`` (any
    columns; a ``verdict`` column is coloured by its value: pass, fail, flaky, regressed, fixed, unknown)
    and it returns the section's HTML and a chart spec (cases per verdict) to add to the page's charts.
    ``report_page(..., verdicts=...)`` calls it; ``report`` passes nothing until the verdicts land.
    """
    if not verdicts:
        return "", None
    columns: list[str] = []
    for row in verdicts.values():
        columns.extend(c for c in row if c not in columns)
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    rows = []
    counts: dict[str, int] = {}
    for case, row in sorted(verdicts.items()):
        verdict = str(row.get("verdict", ""))
        counts[verdict] = counts.get(verdict, 0) + 1
        cells = "".join(f"<td>{esc(row.get(c, ''))}</td>" for c in columns)
        rows.append(f"<tr class='verdict-{esc(verdict)}' data-case='{esc(case)}'><th>{esc(case)}</th>{cells}</tr>")
    section = (
        "<h2>Verdicts per case</h2><div class='charts'>"
        + chart_box("chart-verdicts")
        + f"</div><table id='verdicts'><tr><th>case</th>{head}</tr>{''.join(rows)}</table>"
    )
    labels = sorted(counts)
    chart = {
        "canvas": "chart-verdicts",
        "title": "cases per verdict",
        "labels": labels,
        "datasets": [{"label": "cases", "data": [counts[v] for v in labels], "backgroundColor": _PALETTE[0]}],
    }
    return section, chart


def report_page(report: EvidenceReport, *, verdicts: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The report as one self-contained HTML page: a chart per metric (one bar per version), the table,
    the comparison of two versions when one was asked for, and the per-case verdicts when given."""
    versions = [row.group if row.group is not None else "(none)" for row in report.rows]
    charts: list[dict[str, Any]] = []
    boxes = []
    for metric in METRICS:
        values = [row.metric(metric) for row in report.rows]
        if all(v is None for v in values):
            continue
        canvas = f"chart-{metric}"
        boxes.append(chart_box(canvas))
        colours = [_PALETTE[i % len(_PALETTE)] for i in range(len(versions))]
        charts.append(
            {
                "canvas": canvas,
                "title": _LABELS.get(metric, metric),
                "labels": versions,
                "datasets": [{"label": metric, "data": values, "backgroundColor": colours}],
            }
        )
    head = "".join(f"<th>{esc(_LABELS.get(m, m))}</th>" for m in METRICS)
    rows = "".join(
        f"<tr data-version='{esc(v)}'><th>{esc(v)}</th>"
        + "".join(f"<td class='num'>{_number(row.metric(m))}</td>" for m in METRICS)
        + "</tr>"
        for v, row in zip(versions, report.rows, strict=True)
    )
    body = [
        f"<h2>Metrics per {esc(report.by)}</h2><div class='charts' id='metric-charts'>{''.join(boxes)}</div>",
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
    section, chart = verdict_matrix(verdicts)
    if chart is not None:
        body.append(section)
        charts.append(chart)
    subtitle = f"{len(report.rows)} group(s) by {report.by}, {sum(r.sessions for r in report.rows)} session(s)"
    return page("Agent evidence report", subtitle, "\n".join(body), {"versions": versions, "charts": charts})
