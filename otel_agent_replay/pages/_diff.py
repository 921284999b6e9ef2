"""``diff --html``: two tapes side by side, run by run, led by the causal diff.

The page opens with which side is a fork of what (tape, run, step, edit), then the causes, each with
its consequences folded under it (``<details>``), then every difference flat (folded too). The tables
mark a step whose own difference is a cause (``cause``) apart from one that only carries a cause
(``consequence``) and from a child step answered with its parent (``answered``, not missing); a
chart shows each step's duration on both sides.
"""

from __future__ import annotations

from typing import Any

from otel_agent_replay.comparison import Cause, Comparison, Difference, Forked
from otel_agent_replay.comparison import short as short_json
from otel_agent_replay.conversation import said_messages, said_text
from otel_agent_replay.tape import Run, Step, lineage

from ._html import chart_box, esc, page

_ROLE_LABELS = {
    "cause": "cause",
    "consequence": "consequence",
    "answered": "answered with its parent",
    "missing": "only one side",
}


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


def _change(d: Difference, limit: int = 160) -> str:
    """``kind path: left → right`` as HTML."""
    return (
        f"<b>{esc(d.kind.value)}</b> <code>{esc(d.path)}</code>: "
        f"<span class='mono'>{esc(short_json(d.left, limit))}</span> → "
        f"<span class='mono'>{esc(short_json(d.right, limit))}</span>"
    )


def _label(role: str) -> str:
    return f"<span class='label label-{role}'>{esc(_ROLE_LABELS[role])}</span>"


def _cause_item(index: int, cause: Cause) -> str:
    """One cause: its own differences, then its consequences folded."""
    where = f" <code>{esc(cause.step)}</code>" if cause.step else ""
    first = " first" if index == 0 else ""
    own = "".join(f"<li>{_change(d)}</li>" for d in cause.differences)
    folded = ""
    if cause.consequences:
        items = "".join(
            f"<li class='consequence' data-carried='{esc(c.carried.value)}' data-step='{esc(c.difference.step)}'>"
            f"{_label('consequence')} <span class='carried'>[{esc(c.carried.value)}]</span> "
            f"{esc(c.difference.step or 'the run')} {_change(c.difference, 100)}</li>"
            for c in cause.consequences
        )
        folded = (
            f"<details class='consequences'><summary>{cause.count} consequence(s) of this cause</summary>"
            f"<ol>{items}</ol></details>"
        )
    return (
        f"<li class='cause{first}' data-origin='{esc(cause.origin.value)}' data-step='{esc(cause.step)}'>"
        f"<div>{_label('cause')} <b>{esc(cause.origin.value)}</b>{where}</div>"
        f"<ul class='own'>{own}</ul>{folded}</li>"
    )


def _forks(forks: tuple[Forked, ...]) -> str:
    if not forks:
        return ""
    items = "".join(
        f"<div class='lineage' data-side='{esc(f.side)}' data-run='{esc(f.run_id)}'>{esc(str(f))}</div>" for f in forks
    )
    return f"<section id='lineage'>{items}</section>"


def _roles(comparison: Comparison) -> dict[str, str]:
    """Each step's role in the table: ``cause`` when a cause's own difference is there, else
    ``consequence``; ``answered`` for a child step answered with its parent."""
    roles = dict.fromkeys(comparison.answered, "answered")
    for cause in comparison.causes:
        for c in cause.consequences:
            if c.difference.step:
                roles.setdefault(c.difference.step, "consequence")
    for cause in comparison.causes:
        for d in cause.differences:
            if d.step:
                roles[d.step] = "cause"
    return roles


def _reasons(comparison: Comparison) -> dict[str, list[str]]:
    """Each step's differences, as ``cause: …`` or ``consequence (data): …`` lines (HTML)."""
    marked: dict[str, list[str]] = {}
    for cause in comparison.causes:
        for d in cause.differences:
            if d.step:
                marked.setdefault(d.step, []).append(f"cause ({esc(cause.origin.value)}): {_change(d, 80)}")
        for c in cause.consequences:
            d = c.difference
            if d.step:
                marked.setdefault(d.step, []).append(f"consequence ({esc(c.carried.value)}): {_change(d, 80)}")
    return marked


def _lineage_line(side: str, run: Run | None) -> str:
    """A forked run's lineage above its table: ``right run …: fork of TAPE, run …, at step …, edit …``."""
    forked = None if run is None else lineage(run)
    if run is None or forked is None:
        return ""
    return f"<div class='lineage' data-side='{side}'>{side} run {esc(run.run_id)}: {esc(str(forked))}</div>"


def _run_table(
    index: int, left: Run | None, right: Run | None, roles: dict[str, str], marked: dict[str, list[str]]
) -> tuple[str, dict[str, Any]]:
    left_steps = {s.step_id: s for s in (left.steps if left else ())}
    right_steps = {s.step_id: s for s in (right.steps if right else ())}
    order = [s.step_id for s in (left.steps if left else ())]
    order += [s.step_id for s in (right.steps if right else ()) if s.step_id not in left_steps]
    rows = []
    for step_id in order:
        a, b = left_steps.get(step_id), right_steps.get(step_id)
        role = roles.get(step_id) or ("missing" if a is None or b is None else "same")
        label = _label(role) if role != "same" else ""
        why = "".join(f"<div class='mark'>{r}</div>" for r in marked.get(step_id, []))
        rows.append(
            f"<tr class='{role}' data-step='{esc(step_id)}' data-role='{role}'><td class='mono'>{label} "
            f"{esc(step_id)}{why}</td><td class='side'>{_face(a) if a else '(absent)'}</td>"
            f"<td class='side'>{_face(b) if b else '(absent)'}</td></tr>"
        )
    title = f"run {index + 1}: {esc(left.agent_name if left else right.agent_name if right else '?')}"
    table = (
        f"<h2>{title}</h2>{_lineage_line('left', left)}{_lineage_line('right', right)}"
        f"<div class='charts'>{chart_box(f'chart-run-{index}')}</div>"
        f"<table class='runs' id='run-{index}'><tr><th>step</th><th>left</th><th>right</th></tr>{''.join(rows)}</table>"
    )

    def durations(steps: dict[str, Step]) -> list[float | None]:
        return [round(steps[s].duration_ns / 1e6, 3) if s in steps else None for s in order]

    chart = {
        "canvas": f"chart-run-{index}",
        "title": "duration per step (ms); causes marked !, consequences *",
        "labels": [s + {"cause": " !", "consequence": " *"}.get(roles.get(s, ""), "") for s in order],
        "datasets": [
            {"label": "left", "data": durations(left_steps), "backgroundColor": "#4e79a7"},
            {"label": "right", "data": durations(right_steps), "backgroundColor": "#f28e2b"},
        ],
    }
    return table, chart


def diff_page(comparison: Comparison, left: tuple[Run, ...], right: tuple[Run, ...]) -> str:
    """Two tapes' runs side by side as one self-contained page: the forks, the causes (their
    consequences folded), every difference, then the runs with cause and consequence steps marked."""
    causes = "".join(_cause_item(i, c) for i, c in enumerate(comparison.causes))
    listing = "".join(
        f"<li data-kind='{esc(d.kind.value)}'>{esc(d.step)} {_change(d)}</li>" for d in comparison.differences
    )
    verdict = comparison.headline()
    body = [f"<h2 id='verdict'>{esc(verdict)}</h2>", _forks(comparison.forks)]
    if comparison.causes:
        body.append(f"<section id='causes'><ol>{causes}</ol></section>")
        body.append(
            f"<details id='all-differences'><summary>every difference, by kind ({len(comparison.differences)})"
            f"</summary><ol id='divergences'>{listing}</ol></details>"
        )
    roles, marked = _roles(comparison), _reasons(comparison)
    charts = []
    for index in range(max(len(left), len(right))):
        table, chart = _run_table(
            index,
            left[index] if index < len(left) else None,
            right[index] if index < len(right) else None,
            roles,
            marked,
        )
        body.append(table)
        charts.append(chart)
    data = {
        "left": comparison.left,
        "right": comparison.right,
        "same": comparison.same,
        "forks": [f.to_json() for f in comparison.forks],
        "causes": [{"origin": c.origin.value, "step": c.step, "consequences": c.count} for c in comparison.causes],
        "charts": charts,
    }
    return page(f"{comparison.left} → {comparison.right}", verdict, "\n".join(body), data)
