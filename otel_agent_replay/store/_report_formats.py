"""A report's formats: JSON, Markdown (a pull-request comment) and CSV, each a string.

Text from the store (agent names, versions, tools) is data: in Markdown it is a code span nothing in it
can end, in CSV a cell a spreadsheet never reads as a formula, and its control characters are made
visible in both.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any, Final, Literal

import orjson

from otel_agent_replay.core import ConfigurationError, visible

from ._case_format import case_csv, case_dict, case_markdown
from ._headline import metric_summary
from ._metrics import METRICS
from ._report import EvidenceReport, MetricDelta

__all__ = ["Format", "format_report"]

Format = Literal["json", "md", "csv"]


def _label(group: str | None) -> str:
    return "(none)" if group is None else group


_LONGEST_BACKTICKS = re.compile("`+")


def _code(text: str, *, cell: bool = True) -> str:
    """Stored text (an agent version, a tool name) as a Markdown code span that nothing in it can end.

    Control characters and line breaks become visible escapes (a newline would end the table row);
    the span is fenced with more backticks than the longest run in the text; in a table ``cell``,
    a pipe is escaped (GitHub splits cells at a pipe even inside a code span).
    """
    text = visible(text, newlines=False)
    if cell:
        text = text.replace("|", "\\|")
    longest = max((len(m) for m in _LONGEST_BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or text.startswith(" ") or text.endswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _csv_text(text: str) -> str:
    """Stored text as a CSV cell a spreadsheet shows as text: never a formula, never a control character."""
    if text.startswith(_FORMULA_START):
        text = "'" + text  # the usual guard: a leading apostrophe makes the cell text
    return visible(text)


def _number(value: float | None, metric: str) -> str:
    if value is None:
        return "–"
    if metric.endswith("_rate"):
        return f"{100 * value:.1f}%"
    if metric.startswith("latency"):
        return f"{value:,.1f} ms"
    return f"{value:,.0f}"


def _signed(delta: MetricDelta) -> str:
    if delta.delta is None:
        return "–"
    if delta.metric.endswith("_rate"):
        text = f"{100 * delta.delta:+.1f} pt"
    elif delta.metric.startswith("latency"):
        text = f"{delta.delta:+,.1f} ms"
    else:
        text = f"{delta.delta:+,.0f}"
    return text if delta.delta_pct is None else f"{text} ({delta.delta_pct:+.1f}%)"


_MARKS: Final = {"better": "✅ better", "worse": "⚠️ worse", "same": "same", "n/a": "–"}


def _as_dict(report: EvidenceReport) -> dict[str, Any]:
    rows = []
    for row in report.rows:
        item: dict[str, Any] = {report.by: row.group}
        item.update({m: getattr(row, m) for m in METRICS})
        item.update(
            tool_calls=row.tool_calls,
            evals=row.evals,
            out_of_bounds_tools={tool: n for tool, n in row.out_of_bounds_tools},
        )
        rows.append(item)
    out: dict[str, Any] = {"by": report.by, "headline": report.headline(), "rows": rows, "comparison": None}
    c = report.comparison
    if c is not None:
        out["comparison"] = {
            "baseline": c.baseline,
            "candidate": c.candidate,
            "verdict": c.verdict,
            "regressed": c.regressed,
            "metrics": {
                d.metric: {
                    "baseline": d.baseline,
                    "candidate": d.candidate,
                    "delta": d.delta,
                    "delta_pct": d.delta_pct,
                    "change": d.change,
                    "threshold": None if d.threshold is None else str(d.threshold),
                    "regressed": d.regressed,
                }
                for d in c.deltas
            },
        }
    if report.cases is not None:
        out["cases"] = case_dict(report.cases)
    return out


def _markdown(report: EvidenceReport) -> str:
    lines = ["### Agent evidence report", ""]
    said = report.headline("markdown")
    if said is not None:
        lines += [f"**{said}**", ""]
    header = [report.by, *METRICS]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in report.rows:
        cells = [_code(_label(row.group)), *(_number(row.metric(m), m) for m in METRICS)]
        lines.append("| " + " | ".join(cells) + " |")
    for row in report.rows:
        if row.out_of_bounds_tools:
            tools = ", ".join(f"{_code(t, cell=False)} × {n:,}" for t, n in row.out_of_bounds_tools)
            lines += ["", f"Out-of-bounds calls in {_code(_label(row.group), cell=False)}: {tools}"]
    c = report.comparison
    if c is not None:
        title = {
            "regressed": "❌ **regressed**",
            "worse": "⚠️ worse",
            "better": "✅ better",
            "mixed": "⚠️ worse and ✅ better",
            "unchanged": "unchanged",
        }[c.verdict]
        lines += [
            "",
            f"#### {_code(c.candidate, cell=False)} against {_code(c.baseline, cell=False)}: {title}",
            "",
            f"Metrics: {metric_summary(c, 'markdown')}.",
            "",
            f"| metric | {_code(c.baseline)} | {_code(c.candidate)} | delta | threshold | verdict |",
            "|---|---|---|---|---|---|",
        ]
        for d in c.deltas:
            mark = "❌ **regressed**" if d.regressed else _MARKS[d.change]
            limit = "–" if d.threshold is None else f"{d.threshold.amount:g}{'%' if d.threshold.relative else ''}"
            lines.append(
                f"| {d.metric} | {_number(d.baseline, d.metric)} | {_number(d.candidate, d.metric)} | "
                f"{_signed(d)} | {limit} | {mark} |"
            )
    if report.cases is not None:
        lines += ["", *case_markdown(report.cases)]
    return "\n".join(lines) + "\n"


def _plain(value: float | None) -> str:
    if value is None:
        return ""
    if value == int(value):
        return str(int(value))
    return repr(round(value, 6))


def _csv(report: EvidenceReport) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([report.by, *METRICS, "verdict"])
    for row in report.rows:
        writer.writerow([_csv_text(_label(row.group)), *(_plain(row.metric(m)) for m in METRICS), ""])
    c = report.comparison
    if c is not None:
        cells = [_plain(d.delta) for d in c.deltas]
        writer.writerow([_csv_text(f"delta {c.baseline}..{c.candidate}"), *cells, c.verdict])
    if report.cases is not None:
        writer.writerow([])
        case_csv(report.cases, writer, _csv_text)
    return buffer.getvalue()


def format_report(report: EvidenceReport, fmt: Format = "md") -> str:
    """The report as ``json``, ``md`` (Markdown for a pull-request comment) or ``csv`` text."""
    if fmt == "json":
        return orjson.dumps(_as_dict(report), option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"
    if fmt == "md":
        return _markdown(report)
    if fmt == "csv":
        return _csv(report)
    raise ConfigurationError(f"report format {fmt!r}: use json, md or csv")
