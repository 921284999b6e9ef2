"""``diff --html``: two tapes side by side, run by run, with the steps that differ marked, and a chart
of each step's duration on both sides."""

from __future__ import annotations

from typing import Any

from otel_agent_replay.comparison import Comparison
from otel_agent_replay.comparison import short as short_json
from otel_agent_replay.conversation import said_messages, said_text
from otel_agent_replay.tape import Run, Step

from ._html import chart_box, esc, page


def _face(step: Step) -> str:
    """A step in one cell: seq, tool, and what it was given and gave (what a model said)."""
    if step.kind == "llm":
        said = said_messages(step.tool, step.result, step.attributes)
        what = "said " + said_text(said, 120) if said else "result " + short_json(step.result, 120)
    elif step.error:
        what = f"{step.error.type}: {step.error.message}"
    else:
        what = "→ " + short_json(step.result, 120)
    return (
        f"<div><b>{step.seq}</b> <code>{esc(step.tool)}</code> <span class='kind'>{esc(step.kind)}</span></div>"
        f"<div class='mono'>{esc(short_json(step.args, 160))}</div><div class='mono'>{esc(what)}</div>"
    )


def _run_table(
    index: int, left: Run | None, right: Run | None, marked: dict[str, list[str]]
) -> tuple[str, dict[str, Any]]:
    left_steps = {s.step_id: s for s in (left.steps if left else ())}
    right_steps = {s.step_id: s for s in (right.steps if right else ())}
    order = [s.step_id for s in (left.steps if left else ())]
    order += [s.step_id for s in (right.steps if right else ()) if s.step_id not in left_steps]
    rows = []
    for step_id in order:
        a, b = left_steps.get(step_id), right_steps.get(step_id)
        reasons = marked.get(step_id, [])
        css = "missing" if a is None or b is None else ("differs" if reasons else "same")
        why = "".join(f"<div class='mark'>{esc(r)}</div>" for r in reasons)
        rows.append(
            f"<tr class='{css}' data-step='{esc(step_id)}'><td class='mono'>{esc(step_id)}{why}</td>"
            f"<td class='side'>{_face(a) if a else '(absent)'}</td>"
            f"<td class='side'>{_face(b) if b else '(absent)'}</td></tr>"
        )
    title = f"run {index + 1}: {esc(left.agent_name if left else right.agent_name if right else '?')}"
    table = (
        f"<h2>{title}</h2><div class='charts'>{chart_box(f'chart-run-{index}')}</div>"
        f"<table class='runs' id='run-{index}'><tr><th>step</th><th>left</th><th>right</th></tr>{''.join(rows)}</table>"
    )

    def durations(steps: dict[str, Step]) -> list[float | None]:
        return [round(steps[s].duration_ns / 1e6, 3) if s in steps else None for s in order]

    chart = {
        "canvas": f"chart-run-{index}",
        "title": "duration per step (ms); differing steps marked *",
        "labels": [s + (" *" if s in marked else "") for s in order],
        "datasets": [
            {"label": "left", "data": durations(left_steps), "backgroundColor": "#4e79a7"},
            {"label": "right", "data": durations(right_steps), "backgroundColor": "#f28e2b"},
        ],
    }
    return table, chart


def diff_page(comparison: Comparison, left: tuple[Run, ...], right: tuple[Run, ...]) -> str:
    """Two tapes' runs side by side as one self-contained page, the steps that differ marked with why."""
    marked: dict[str, list[str]] = {}
    for d in comparison.differences:
        if d.step:
            marked.setdefault(d.step, []).append(
                f"{d.kind.value} {d.path}: {short_json(d.left)} → {short_json(d.right)}"
            )
    listing = "".join(
        f"<li data-kind='{esc(d.kind.value)}'><b>{esc(d.kind.value)}</b> {esc(d.step)} <code>{esc(d.path)}</code>: "
        f"<span class='mono'>{esc(short_json(d.left, 160))}</span> → "
        f"<span class='mono'>{esc(short_json(d.right, 160))}</span></li>"
        for d in comparison.differences
    )
    verdict = "no divergence" if comparison.same else f"{len(comparison.differences)} divergence(s)"
    body = [f"<h2 id='verdict'>{esc(verdict)}</h2><ol id='divergences'>{listing}</ol>"]
    charts = []
    for index in range(max(len(left), len(right))):
        table, chart = _run_table(
            index, left[index] if index < len(left) else None, right[index] if index < len(right) else None, marked
        )
        body.append(table)
        charts.append(chart)
    data = {"left": comparison.left, "right": comparison.right, "same": comparison.same, "charts": charts}
    return page(f"{comparison.left} → {comparison.right}", verdict, "\n".join(body), data)
