"""A comparison's headline: what changed between two versions, named, in one line.

With per-case verdicts: the regressed and the fixed cases, each with its pass rates in both versions
and the test's p-value (most significant first), then the flaky ones, then the cases that could not be
judged, then how many cases stayed as they were; metrics past their threshold follow. Without them
(no repeated runs): the metrics that regressed past a threshold, got worse and got better, each with
its change. Never a bare "mixed". The same words in every format: ``text`` for the terminal and JSON
(control and bidirectional characters escaped), ``markdown`` for a pull-request comment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal, Protocol

from otel_agent_replay.core import visible

from ._verdicts import CaseComparison, CaseRate, CaseReport, CaseVerdict

__all__ = ["MetricDelta", "Style", "VersionComparison", "headline", "metric_summary"]


class MetricDelta(Protocol):
    """What the headline reads of ``_report.MetricDelta`` (which imports this module)."""

    @property
    def metric(self) -> str: ...
    @property
    def delta(self) -> float | None: ...
    @property
    def change(self) -> str: ...
    @property
    def threshold(self) -> object | None: ...
    @property
    def regressed(self) -> bool: ...


class VersionComparison(Protocol):
    """What the headline reads of ``_report.VersionComparison``."""

    @property
    def baseline(self) -> str: ...
    @property
    def candidate(self) -> str: ...
    @property
    def deltas(self) -> Sequence[MetricDelta]: ...


Style = Literal["text", "markdown"]
NAMED: Final = 5
"""Cases named per verdict; the rest are counted."""
_ID: Final = 13
"""A case id longer than this is shown as its first 12 characters and an ellipsis."""
_INPUT: Final = 40
_ORDER: Final = (CaseVerdict.REGRESSED, CaseVerdict.FIXED, CaseVerdict.FLAKY, CaseVerdict.ERROR)
_QUIET: Final = (CaseVerdict.PASS, CaseVerdict.FAIL, CaseVerdict.UNKNOWN)
_MARKS: Final = {
    CaseVerdict.REGRESSED: "❌ ", CaseVerdict.FIXED: "✅ ", CaseVerdict.FLAKY: "⚠️ ", CaseVerdict.ERROR: "❗ ",
}  # fmt: skip
_WORDS: Final = {CaseVerdict.ERROR: "error (not judged)"}


def _short(text: str, limit: int) -> str:
    text = " ".join(visible(text, newlines=False).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _code(text: str) -> str:
    """A short text as a Markdown code span nothing in it can end (backticks and pipes replaced)."""
    return "`" + text.replace("`", "'").replace("|", "¦") + "`"


def _rate(r: CaseRate) -> str:
    if r.runs == 0:
        return f"no judged run ({r.errors} error)" if r.errors else "no runs"
    return f"{100 * (r.rate or 0.0):.0f}% ({r.passes}/{r.runs})"


def _p(value: float) -> str:
    return f"{value:.2g}"


def _case(c: CaseComparison, style: Style) -> str:
    name = _short(c.case_id, _ID)
    given = c.baseline.input or c.candidate.input
    if style == "markdown":
        who = _code(name) + (f" {_code(_short(given, _INPUT))}" if given else "")
    else:
        who = name + (f" {_short(given, _INPUT)}" if given else "")
    if c.verdict == CaseVerdict.ERROR:
        why = (c.candidate.judge_errors or c.baseline.judge_errors or ("a judge could not judge",))[0]
        return f"{who}: {_short(why, 60)}"
    p = "" if c.p_value is None else f", p = {_p(c.p_value)}"
    return f"{who} {_rate(c.baseline)} → {_rate(c.candidate)}{p}"


def _named(comparisons: tuple[CaseComparison, ...], verdict: CaseVerdict, style: Style) -> str:
    found = [c for c in comparisons if c.verdict == verdict]
    found.sort(key=lambda c: (c.p_value if c.p_value is not None else 1.0, c.case_id))
    names = [_case(c, style) for c in found[:NAMED]]
    if len(found) > NAMED:
        names.append(f"and {len(found) - NAMED} more")
    mark = _MARKS[verdict] if style == "markdown" else ""
    return f"{mark}{len(found)} {_WORDS.get(verdict, verdict.value)}: " + ", ".join(names)


def _signed(d: MetricDelta) -> str:
    value = d.delta or 0.0
    if d.metric.endswith("_rate"):
        return f"{100 * value:+.1f} pt"
    if d.metric.startswith("latency"):
        return f"{value:+,.1f} ms"
    return f"{value:+,.0f}"


def _metrics(deltas: list[MetricDelta], style: Style) -> str:
    name: Callable[[str], str] = _code if style == "markdown" else str
    return ", ".join(f"{name(d.metric)} {_signed(d)}" for d in deltas)


def _past_threshold(comparison: VersionComparison, style: Style) -> str | None:
    regressed = [d for d in comparison.deltas if d.regressed]
    if not regressed:
        return None
    limits = ", ".join(str(d.threshold) for d in regressed if d.threshold is not None)
    return f"regressed past a threshold: {_metrics(regressed, style)} ({limits})"


def metric_summary(comparison: VersionComparison, style: Style = "text") -> str:
    """The metrics that changed, named: ``regressed past a threshold: …; worse: …; better: …``, or
    ``no metric changed``."""
    worse = [d for d in comparison.deltas if d.change == "worse" and not d.regressed]
    better = [d for d in comparison.deltas if d.change == "better"]
    past = _past_threshold(comparison, style)
    parts = [past] if past else []
    if worse:
        parts.append(f"worse: {_metrics(worse, style)}")
    if better:
        parts.append(f"better: {_metrics(better, style)}")
    return "; ".join(parts) or "no metric changed"


def headline(comparison: VersionComparison | None, cases: CaseReport | None, style: Style = "text") -> str | None:
    """What changed from the baseline to the candidate, named (see the module); None without a comparison."""
    compared = cases.compared if cases is not None and cases.compared is not None else None
    if comparison is not None:
        baseline, candidate = comparison.baseline, comparison.candidate
    elif compared is not None:
        baseline, candidate = compared
    else:
        return None
    if style == "markdown":
        who = f"{_code(_short(candidate, 40))} against {_code(_short(baseline, 40))}"
    else:
        who = f"{_short(candidate, 40)} against {_short(baseline, 40)}"
    if cases is None or compared is None or not cases.comparisons:
        return f"{who}: {metric_summary(comparison, style) if comparison is not None else 'no cases compared'}"
    changed = [_named(cases.comparisons, v, style) for v in _ORDER if cases.counts.get(v.value)]
    quiet = [f"{cases.counts[v.value]} {v.value}" for v in _QUIET if cases.counts.get(v.value)]
    if not changed:
        changed = ["no case changed beyond chance"]
    parts = [*changed, ", ".join(quiet)] if quiet else changed
    past = None if comparison is None else _past_threshold(comparison, style)
    if past:
        parts.append(past)
    return f"{who}: " + "; ".join(p for p in parts if p)
