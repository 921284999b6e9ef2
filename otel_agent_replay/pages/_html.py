"""The page shell: one self-contained HTML file with its data, its styles and the chart library inline.

Nothing is fetched when the page opens: the chart library (Chart.js, vendored in ``_vendor``) and the
data are embedded, and a Content-Security-Policy forbids the page any request (``default-src 'none'``),
so a page mailed or attached to a CI run shows the same thing offline. Charts are drawn by Chart.js from
the JSON embedded in the page (``<script type="application/json" id="page-data">``).

Stored text reaches a page through ``esc`` (the HTML) and ``page`` (the embedded data), and both pass it
through ``core.visible``, the terminal's sanitiser: a control character or a bidirectional override,
isolate or mark in a label is shown as its escape (``\\u202e``) and never reorders the text. A chart's
category labels are shortened (``chart_label``: head and tail kept, wrapped on two lines) so that long
labels (``report --by task``) leave the chart room to draw; each bar's tooltip shows the whole label.
"""

from __future__ import annotations

import html
import textwrap
from functools import cache
from importlib import resources
from typing import Any

import orjson

from otel_agent_replay.core import visible

CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
"""The page may run its own inline script and styles and nothing else: no request of any kind."""

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 28px 0 8px; }
.sub { color: #5b6475; margin-bottom: 16px; }
table { border-collapse: collapse; margin: 8px 0; } th, td { border: 1px solid #d5d9e0; padding: 4px 8px;
  text-align: left; vertical-align: top; } th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 16px; }
.chart { border: 1px solid #d5d9e0; border-radius: 6px; padding: 8px; height: 240px; }
.differs { background: #fff1e6; } .missing { background: #fde8e8; } .same { }
.mark { color: #b54708; font-weight: 600; } code, .mono { font-family: ui-monospace, monospace; font-size: 12px; }
.side { width: 50%; } .kind { color: #5b6475; font-size: 12px; }
.verdict-pass { background: #e7f6ec; } .verdict-fail, .verdict-regressed { background: #fde8e8; }
.verdict-flaky { background: #fff6db; } .verdict-fixed { background: #e6f0ff; } .verdict-error { background: #f3e8fd; }
td.input { max-width: 32em; } .interval { color: #5b6475; white-space: nowrap; }
tr.cause, li.cause { background: #fde2e1; } tr.consequence { background: #fff6db; } tr.answered { color: #5b6475; }
.label { font-size: 11px; font-weight: 700; padding: 0 4px; border-radius: 3px; } .label-cause { background: #b42318;
  color: #fff; } .label-consequence { background: #edc948; } .label-answered, .label-missing { background: #d5d9e0; }
.lineage { border-left: 4px solid #4e79a7; background: #eef3fa; padding: 4px 8px; margin: 4px 0; }
li.cause { margin: 6px 0; padding: 4px 8px; } details { margin: 4px 0; } summary { cursor: pointer; }
"""


@cache
def chart_library() -> str:
    """The vendored Chart.js bundle (UMD, minified), as text."""
    return resources.files(__package__).joinpath("_vendor/chart.umd.min.js").read_text(encoding="utf-8")


def esc(value: object) -> str:
    """Text for HTML: escaped, control and bidirectional characters shown as escapes (``core.visible``)."""
    text = value if isinstance(value, str) else str(value)
    return html.escape(visible(text), quote=True)


def _visible_data(data: Any) -> Any:
    """``data`` with every string in it (keys too) passed through ``core.visible``."""
    if isinstance(data, str):
        return visible(data)
    if isinstance(data, dict):
        return {_visible_data(k) if isinstance(k, str) else k: _visible_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_visible_data(v) for v in data]
    return data


LABEL_WIDTH = 16
"""Characters per line of a chart's category label (two lines at most)."""


def chart_label(text: str, width: int = LABEL_WIDTH, lines: int = 2) -> str | list[str]:
    """A category label a chart can draw: the text when it fits one line, else at most ``lines`` lines of
    ``width`` characters (Chart.js draws a list as lines), wrapped at spaces; a longer text keeps its
    head and, after an ellipsis, its tail, so labels that differ only at their end still differ."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    parts = textwrap.wrap(text, width)
    if len(parts) <= lines:
        return parts
    tail = text[-(width - 1) :]
    cut = tail.find(" ")
    if 0 <= cut < len(tail) - width // 2:
        tail = tail[cut + 1 :]  # start the tail at a word when that leaves enough of it
    return [*parts[: lines - 1], "…" + tail]


def tooltip_text(text: str, width: int = 48, lines: int = 6) -> list[str]:
    """The whole of a label for a tooltip, wrapped to fit a chart (the first ``lines`` lines)."""
    parts = textwrap.wrap(" ".join(text.split()), width) or [""]
    return parts if len(parts) <= lines else [*parts[: lines - 1], parts[lines - 1][: width - 1] + "…"]


def _chart_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A chart as ``_DRAW`` wants it: short labels, the whole ones for the tooltips."""
    labels = [str(label) for label in spec.get("labels", [])]
    out = dict(spec)
    out["labels"] = [chart_label(label) for label in labels]
    out.setdefault("full", [tooltip_text(label) for label in labels])
    return out


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_DRAW = """
(function () {
  var data = JSON.parse(document.getElementById('page-data').textContent);
  var drawn = 0;
  (data.charts || []).forEach(function (spec) {
    var canvas = document.getElementById(spec.canvas);
    if (!canvas) { return; }
    var scales = spec.scales || {};
    scales.x = scales.x || {};
    scales.x.ticks = Object.assign({ autoSkip: true, maxRotation: 0 }, scales.x.ticks || {});
    var notes = spec.notes || [], full = spec.full || [];
    var title = function (items) { return items.length ? full[items[0].dataIndex] : ''; };
    var note = function (item) { return (notes[item.datasetIndex] || [])[item.dataIndex] || ''; };
    new Chart(canvas, {
      type: spec.type || 'bar',
      data: { labels: spec.labels, datasets: spec.datasets },
      options: { animation: false, responsive: true, maintainAspectRatio: false,
                 plugins: { title: { display: true, text: spec.title }, legend: { display: spec.datasets.length > 1 },
                            tooltip: { callbacks: { title: title, afterLabel: note } } },
                 scales: scales }
    });
    canvas.setAttribute('data-drawn', 'yes');
    drawn += 1;
  });
  document.body.setAttribute('data-charts-drawn', String(drawn));
})();
"""


def page(title: str, subtitle: str, body: str, data: dict[str, Any]) -> str:
    """A whole HTML page: ``body`` (HTML), ``data`` embedded as JSON, its ``charts`` drawn by Chart.js.

    A chart is ``{"canvas", "title", "labels", "datasets"}`` and optionally ``"scales"`` and ``"notes"``
    (per dataset, per bar: a line its tooltip adds); its labels are shortened here (``chart_label``)."""
    data = _visible_data(data)  # first: a label's escapes count in its shortened length
    data["charts"] = [_chart_spec(spec) for spec in data.get("charts", [])]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        f"<meta name='generator' content='otel-agent-replay'><title>{esc(title)}</title>"
        f"<style>{_STYLE}</style></head>\n<body>"
        f"<h1>{esc(title)}</h1><div class='sub'>{esc(subtitle)}</div>\n{body}\n"
        f"<script type='application/json' id='page-data'>{_script_json(data)}</script>\n"
        f"<script>{chart_library()}</script>\n<script>{_DRAW}</script>\n</body></html>\n"
    )


def chart_box(canvas_id: str) -> str:
    return f"<div class='chart'><canvas id='{esc(canvas_id)}'></canvas></div>"
