"""The report: metrics per version, a comparison of two versions with a verdict, and its formats.

``report_rows`` computes (no printing); ``format_report`` (in ``_report_formats``) renders JSON,
Markdown (a pull-request comment) or CSV as a string. A threshold is the worsening a metric may show before it counts as
a regression: an absolute amount (``tool_success_rate=0.05``: five points), or relative to the
baseline with ``%`` (``latency_ms_avg=10%``). Only metrics given a threshold can regress; the
others are reported better, worse or the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from otel_agent_replay.core import ConfigurationError

from ._headline import Style, headline
from ._metrics import METRICS, Grouping, VersionMetrics, metrics_by
from ._store import Store
from ._verdicts import CaseReport, CaseVerdict, PriceFn, VerdictRule, case_report, has_repetitions

__all__ = [
    "DIRECTIONS",
    "EvidenceReport",
    "MetricDelta",
    "Threshold",
    "VersionComparison",
    "parse_thresholds",
    "report_rows",
]

Format = Literal["json", "md", "csv"]
Change = Literal["better", "worse", "same", "n/a"]
Verdict = Literal["regressed", "worse", "better", "mixed", "unchanged"]

DIRECTIONS: Final[Mapping[str, int]] = {
    "sessions": 0,
    "tool_success_rate": 1,
    "latency_ms_avg": -1,
    "latency_ms_max": -1,
    "retry_rate": -1,
    "out_of_bounds_calls": -1,
    "pass_rate": 1,
    "tokens_in": -1,
    "tokens_out": -1,
}
"""+1: higher is better; -1: lower is better; 0: neither (never a regression)."""
_EPSILON: Final = 1e-9


@dataclass(frozen=True, slots=True)
class Threshold:
    """How much a metric may worsen: ``amount`` in the metric's unit, or percent of the baseline."""

    metric: str
    amount: float
    relative: bool = False

    def allows(self, baseline: float, worsening: float) -> bool:
        limit = abs(baseline) * self.amount / 100.0 if self.relative else self.amount
        return worsening <= limit + _EPSILON

    def __str__(self) -> str:
        return f"{self.metric}={self.amount:g}{'%' if self.relative else ''}"


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """One metric of a comparison: both values, the change and what it means."""

    metric: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    delta_pct: float | None
    change: Change
    threshold: Threshold | None
    regressed: bool


@dataclass(frozen=True, slots=True)
class VersionComparison:
    """Candidate against baseline, metric by metric."""

    baseline: str
    candidate: str
    deltas: tuple[MetricDelta, ...]
    verdict: Verdict

    @property
    def regressed(self) -> bool:
        """True when a metric worsened past its threshold (the CLI exits 1)."""
        return self.verdict == "regressed"


@dataclass(frozen=True, slots=True)
class EvidenceReport:
    """What ``report_rows`` computed: one row per group and, when asked, a comparison."""

    by: str
    rows: tuple[VersionMetrics, ...]
    comparison: VersionComparison | None = None
    cases: CaseReport | None = None
    """Per case and version rates of repeated runs and, with a comparison, each case's verdict."""

    @property
    def regressed(self) -> bool:
        return self.comparison is not None and self.comparison.regressed

    def headline(self, style: Style = "text") -> str | None:
        """What changed between the compared versions, named: the regressed and fixed cases with their rates
        and p-values, then the flaky ones (``text`` or ``markdown``); None without a comparison."""
        return headline(self.comparison, self.cases, style)

    def failing(self, verdicts: Iterable[CaseVerdict | str]) -> tuple[str, ...]:
        """The cases whose verdict is one of ``verdicts`` (what ``--fail-on`` gates on)."""
        wanted = tuple(verdicts)
        if not wanted or self.cases is None:
            return ()
        return tuple(c.case_id for c in self.cases.having(*wanted))


def _check_metric(name: str, where: str) -> str:
    if name not in DIRECTIONS:
        raise ConfigurationError(f"{where}: unknown metric {name!r}; the metrics are {', '.join(METRICS)}")
    return name


def parse_thresholds(specs: Iterable[str] | Mapping[str, float | str] | None) -> tuple[Threshold, ...]:
    """Thresholds from ``"metric=0.05"`` / ``"metric=10%"`` strings or a ``{metric: amount}`` mapping."""
    if specs is None:
        return ()
    items: list[tuple[str, Any]] = []
    if isinstance(specs, Mapping):
        items = list(specs.items())
    else:
        for spec in specs:
            name, sep, value = str(spec).partition("=")
            if not sep:
                raise ConfigurationError(
                    f"threshold {spec!r}: write METRIC=AMOUNT or METRIC=PERCENT% "
                    f"(e.g. tool_success_rate=0.05, latency_ms_avg=10%)"
                )
            items.append((name.strip(), value.strip()))
    out = []
    for name, value in items:
        _check_metric(name, f"threshold {name}={value}")
        if DIRECTIONS[name] == 0:
            raise ConfigurationError(f"threshold {name}={value}: {name} is neither better nor worse; it cannot regress")
        relative = isinstance(value, str) and value.endswith("%")
        text = value[:-1] if relative else value
        try:
            amount = float(text)
        except (TypeError, ValueError):
            raise ConfigurationError(f"threshold {name}={value}: {value!r} is not a number (or a percentage)") from None
        if not math.isfinite(amount) or amount < 0:
            raise ConfigurationError(f"threshold {name}={value}: give a finite amount of 0 or more")
        out.append(Threshold(name, amount, relative))
    return tuple(out)


def _delta(metric: str, base: float | None, cand: float | None, threshold: Threshold | None) -> MetricDelta:
    if base is None or cand is None:
        return MetricDelta(metric, base, cand, None, None, "n/a", threshold, False)
    delta = cand - base
    pct = None if abs(base) < _EPSILON else 100.0 * delta / abs(base)
    direction = DIRECTIONS[metric]
    if abs(delta) < _EPSILON or direction == 0:
        change: Change = "same" if abs(delta) < _EPSILON else "n/a"
    else:
        change = "better" if delta * direction > 0 else "worse"
    regressed = change == "worse" and threshold is not None and not threshold.allows(base, abs(delta))
    return MetricDelta(metric, base, cand, delta, pct, change, threshold, regressed)


def compare_versions(
    rows: Iterable[VersionMetrics], baseline: str, candidate: str, thresholds: Iterable[Threshold] = ()
) -> VersionComparison:
    """Compare two groups of ``rows``; ``ConfigurationError`` names the groups there are when one is missing."""
    by_group = {row.group: row for row in rows}
    for version in (baseline, candidate):
        if version not in by_group:
            known = ", ".join(repr(g) for g in by_group if g is not None) or "none"
            raise ConfigurationError(f"compare {baseline} {candidate}: no sessions of {version!r} (stored: {known})")
    limits = {t.metric: t for t in thresholds}
    base, cand = by_group[baseline], by_group[candidate]
    deltas = tuple(_delta(m, base.metric(m), cand.metric(m), limits.get(m)) for m in METRICS)
    changes = {d.change for d in deltas}
    verdict: Verdict
    if any(d.regressed for d in deltas):
        verdict = "regressed"
    elif "worse" in changes and "better" in changes:
        verdict = "mixed"
    elif "worse" in changes:
        verdict = "worse"
    elif "better" in changes:
        verdict = "better"
    else:
        verdict = "unchanged"
    return VersionComparison(baseline, candidate, deltas, verdict)


def report_rows(
    store: Store,
    *,
    by: Grouping = "agent_version",
    compare: tuple[str, str] | None = None,
    thresholds: Iterable[str] | Mapping[str, float | str] | Iterable[Threshold] | None = None,
    agent_name: str | None = None,
    tag: str | None = None,
    criteria_version: str | None = None,
    cases: bool | None = None,
    rule: VerdictRule | None = None,
    price: PriceFn | None = None,
) -> EvidenceReport:
    """Metrics per ``by`` group from the stored rows; with ``compare=(baseline, candidate)``, their deltas.

    ``thresholds``: ``["tool_success_rate=0.05", "latency_ms_avg=10%"]``, a ``{metric: amount}``
    mapping, or ``Threshold`` values. ``agent_name``, ``tag`` and ``criteria_version`` narrow what
    is counted. ``cases``: the per-case rates of repeated runs (and, with ``compare``, a verdict
    per case under ``rule``); by default (None) when some case has more than one run of a version.
    ``price`` estimates what the repeated runs' model steps cost.
    """
    rows = metrics_by(store, by, agent_name=agent_name, tag=tag, criteria_version=criteria_version)
    limits: tuple[Threshold, ...]
    if thresholds is None:
        limits = ()
    elif isinstance(thresholds, Mapping):
        limits = parse_thresholds(thresholds)
    else:
        given = list(thresholds)
        limits = tuple(t for t in given if isinstance(t, Threshold))
        limits += parse_thresholds([str(t) for t in given if not isinstance(t, Threshold)])
    if limits and compare is None:
        raise ConfigurationError("thresholds apply to a comparison: give compare=(baseline, candidate) too")
    comparison = None
    if compare is not None:
        baseline, candidate = compare
        comparison = compare_versions(rows, baseline, candidate, limits)
    if cases is None:
        cases = has_repetitions(store, tag=tag, agent_name=agent_name)
    per_case = None
    if cases:
        per_case = case_report(
            store, compare=compare, rule=rule, tag=tag, agent_name=agent_name, criteria_version=criteria_version,
            price=price,
        )  # fmt: skip
    return EvidenceReport(by, tuple(rows), comparison, per_case)
