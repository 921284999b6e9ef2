"""Per case and version: pass count, pass rate with its interval, pass^k; between two versions, a verdict.

A case is a recorded run that replays ran again (``agent_session.case_id``); each stored replay
of it under an agent version is one run of the case for that version (``regress(..., repeat=k)``
stores k). A run passes when its session finished ``success`` and none of its evaluations (of
``criteria_version``, when given) failed; a run that failed, was aborted or was judged a failure
fails; a run whose judges could not judge it (``judge_errors`` in its session's ``extra``) is an
``error``, neither a pass nor a fail; a run still ``running`` is not counted. Each run's
divergences (drift, out-of-bounds calls: what the replay answered anyway) are summed per case.

Between a baseline and a candidate each case gets one verdict (``VerdictRule`` holds the numbers):

- ``error``: some run of the case, in either version, could not be judged (a judge raised or gave no
  verdict): the rates would leave those runs out, so no verdict is given;
- ``unknown``: either version has fewer than ``min_runs`` runs of the case;
- ``regressed`` / ``fixed``: Fisher's exact test (two-sided) finds the two pass rates different at
  level ``alpha``, the candidate's lower / higher;
- otherwise ``pass`` (every run of both versions passed), ``fail`` (none did) or ``flaky`` (both
  outcomes seen, and no difference beyond chance).

The pass rate's interval is the Wilson score interval at ``confidence``; pass^k is the unbiased
estimate that k fresh runs all pass (see ``_stats``). Each case is tested on its own: with many
cases, some ``regressed`` at ``alpha=0.05`` are expected by chance alone (one in twenty cases that
did not change); lower ``alpha`` for a large suite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from otel_agent_replay.core import Choice, ConfigurationError

from ._stats import fisher_p, pass_hat_k, wilson
from ._store import Store, session_filter

__all__ = [
    "CaseComparison",
    "CaseRate",
    "CaseReport",
    "CaseVerdict",
    "PriceFn",
    "VerdictRule",
    "VersionSpend",
    "case_report",
]

PriceFn = Callable[[str, int, int], "float | None"]
"""(model, input tokens, output tokens) → the estimated price in USD, or None when it is not known."""

TEST_NAME: Final = "Fisher's exact test, two-sided"
INTERVAL_NAME: Final = "Wilson score interval"


class CaseVerdict(Choice):
    """What repeated runs of one case say about a candidate version against a baseline."""

    PASS = "pass"
    FAIL = "fail"
    FLAKY = "flaky"
    REGRESSED = "regressed"
    FIXED = "fixed"
    UNKNOWN = "unknown"
    ERROR = "error"
    """Some run of the case could not be judged: its judge raised or gave no verdict."""


@dataclass(frozen=True, slots=True)
class VerdictRule:
    """The numbers a verdict is made with."""

    alpha: float = 0.05
    """The level of Fisher's exact test: a p-value below it is a difference beyond chance."""
    confidence: float = 0.95
    """The confidence of the Wilson interval of each pass rate."""
    pass_k: int = 5
    """The k of pass^k."""
    min_runs: int = 5
    """Fewer runs of a case in either version than this is ``unknown``."""

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ConfigurationError(f"alpha={self.alpha!r}: give a level between 0 and 1, e.g. 0.05")
        if not 0 < self.confidence < 1:
            raise ConfigurationError(f"confidence={self.confidence!r}: give a level between 0 and 1, e.g. 0.95")
        if self.pass_k < 1:
            raise ConfigurationError(f"pass_k={self.pass_k!r}: give a whole number of runs, 1 or more")
        if self.min_runs < 1:
            raise ConfigurationError(f"min_runs={self.min_runs!r}: give a whole number of runs, 1 or more")


@dataclass(frozen=True, slots=True)
class CaseRate:
    """The runs of one case under one version."""

    case_id: str
    version: str | None
    runs: int
    passes: int
    rate: float | None
    low: float | None
    high: float | None
    """The Wilson interval of ``rate``."""
    pass_k: float | None
    """The estimate that k fresh runs all pass (None with fewer than k runs)."""
    failed_repetitions: tuple[int, ...] = ()
    agent_name: str | None = None
    input: str | None = None
    """The case's recorded input as JSON text."""
    errors: int = 0
    """Runs that could not be judged (not in ``runs``)."""
    divergences: int = 0
    """Divergences the replays answered and counted, over the case's runs."""
    judge_errors: tuple[str, ...] = ()
    """Why the judges could not judge (each reason once)."""


@dataclass(frozen=True, slots=True)
class CaseComparison:
    """One case's verdict between two versions."""

    case_id: str
    baseline: CaseRate
    candidate: CaseRate
    verdict: CaseVerdict
    p_value: float | None
    """Fisher's exact test's p-value; None when the verdict is ``unknown``."""


@dataclass(frozen=True, slots=True)
class VersionSpend:
    """What the repeated runs of one version spent on the model."""

    version: str | None
    runs: int
    tokens_in: int
    tokens_out: int
    cost: float | None
    """Estimated USD of the model steps with a known price; None when no price is known."""
    unpriced_models: tuple[str, ...] = ()
    """Models whose price is not known (their tokens are not in ``cost``)."""


@dataclass(frozen=True, slots=True)
class CaseReport:
    """Per case and version rates, the verdicts of a comparison, and the spend per version."""

    rule: VerdictRule
    rates: tuple[CaseRate, ...]
    comparisons: tuple[CaseComparison, ...] = ()
    spend: tuple[VersionSpend, ...] = ()
    compared: tuple[str, str] | None = None
    test: str = TEST_NAME
    interval: str = INTERVAL_NAME
    counts: dict[str, int] = field(default_factory=dict)
    """Cases per verdict."""

    def having(self, *verdicts: CaseVerdict | str) -> tuple[CaseComparison, ...]:
        """The comparisons whose verdict is one of ``verdicts``."""
        wanted = {CaseVerdict(v) for v in verdicts}
        return tuple(c for c in self.comparisons if c.verdict in wanted)


@dataclass
class _Runs:
    agent_name: str | None = None
    input: str | None = None
    outcomes: list[tuple[int, bool]] = field(default_factory=list)
    """(repetition, passed) of the judged runs, in repetition order."""
    errors: int = 0
    divergences: int = 0
    judge_errors: list[str] = field(default_factory=list)


def _rate(case_id: str, version: str | None, runs: _Runs | None, rule: VerdictRule) -> CaseRate:
    if runs is None:
        return CaseRate(case_id, version, 0, 0, None, None, None, None)
    problems = tuple(dict.fromkeys(runs.judge_errors))
    if not runs.outcomes:
        return CaseRate(
            case_id, version, 0, 0, None, None, None, None, (), runs.agent_name, runs.input, runs.errors,
            runs.divergences, problems,
        )  # fmt: skip
    n = len(runs.outcomes)
    passes = sum(1 for _, ok in runs.outcomes if ok)
    interval = wilson(passes, n, rule.confidence)
    low, high = interval if interval is not None else (None, None)
    failed = tuple(rep for rep, ok in runs.outcomes if not ok)
    return CaseRate(
        case_id, version, n, passes, passes / n, low, high, pass_hat_k(passes, n, rule.pass_k), failed,
        runs.agent_name, runs.input, runs.errors, runs.divergences, problems,
    )  # fmt: skip


def judge(baseline: CaseRate, candidate: CaseRate, rule: VerdictRule) -> tuple[CaseVerdict, float | None]:
    """The verdict of one case (see the module's docstring) and the test's p-value."""
    if baseline.errors or candidate.errors:
        return CaseVerdict.ERROR, None
    if baseline.runs < rule.min_runs or candidate.runs < rule.min_runs:
        return CaseVerdict.UNKNOWN, None
    p = fisher_p(baseline.passes, baseline.runs, candidate.passes, candidate.runs)
    if p < rule.alpha:
        worse = candidate.passes * baseline.runs < baseline.passes * candidate.runs
        return (CaseVerdict.REGRESSED if worse else CaseVerdict.FIXED), p
    if baseline.passes == baseline.runs and candidate.passes == candidate.runs:
        return CaseVerdict.PASS, p
    if baseline.passes == 0 and candidate.passes == 0:
        return CaseVerdict.FAIL, p
    return CaseVerdict.FLAKY, p


def _where(tag: str | None, agent_name: str | None) -> tuple[str, list[Any]]:
    where, params = session_filter(tag=tag, agent_name=agent_name)
    return where + (" AND " if where else " WHERE ") + "s.case_id IS NOT NULL", params


def has_repetitions(store: Store, *, tag: str | None = None, agent_name: str | None = None) -> bool:
    """Whether some case has more than one stored run under one version (what makes rates worth showing)."""
    where, params = _where(tag, agent_name)
    sql = (
        f"SELECT 1 FROM agent_session s{where} AND s.status <> 'running' "
        "GROUP BY s.case_id, s.agent_version HAVING COUNT(*) > 1 LIMIT 1"
    )
    with store._backend.read() as tx:
        return bool(tx.fetchall(sql, params))


def case_report(
    store: Store,
    *,
    compare: tuple[str, str] | None = None,
    rule: VerdictRule | None = None,
    tag: str | None = None,
    agent_name: str | None = None,
    criteria_version: str | None = None,
    price: PriceFn | None = None,
) -> CaseReport:
    """Rates per case and version from the stored replays; with ``compare``, a verdict per case."""
    rule = rule or VerdictRule()
    where, params = _where(tag, agent_name)
    failed_evals = "SELECT COUNT(*) FROM eval_record e WHERE e.session_id = s.session_id AND NOT e.pass"
    eval_params: list[Any] = []
    if criteria_version is not None:
        failed_evals += " AND e.criteria_version = ?"
        eval_params.append(criteria_version)
    runs_sql = (
        f"SELECT s.case_id, s.agent_version, s.repetition, s.status, s.agent_name, s.input, s.started_at, "
        f"({failed_evals}), s.extra FROM agent_session s{where} AND s.status <> 'running' "
        "ORDER BY s.case_id, s.agent_version, s.repetition, s.started_at, s.session_id"
    )
    spend_sql = (
        f"SELECT s.agent_version, p.model, SUM(p.input_tokens), SUM(p.output_tokens) FROM tape_span p "
        f"JOIN agent_session s ON s.session_id = p.session_id{where} AND s.status <> 'running' AND p.kind = 'llm' "
        "GROUP BY s.agent_version, p.model"
    )
    with store._backend.read() as tx:
        found = tx.fetchall(runs_sql, [*eval_params, *params])
        spent = tx.fetchall(spend_sql, params)
    by_case: dict[str, dict[str | None, _Runs]] = {}
    first_seen: dict[str | None, int] = {}
    for case_id, version, repetition, status, agent, text, started, failed, extra_json in found:
        runs = by_case.setdefault(case_id, {}).setdefault(version, _Runs(agent, text))
        extra = _extra(extra_json)
        count = extra.get("divergences")
        runs.divergences += count if isinstance(count, int) and not isinstance(count, bool) else 0
        problems = extra.get("judge_errors")
        if isinstance(problems, list) and problems:
            runs.errors += 1
            runs.judge_errors.extend(str(p) for p in problems)
        else:
            runs.outcomes.append((int(repetition or 1), status == "success" and not failed))
        first_seen[version] = min(first_seen.get(version, started), started)
    versions = sorted(first_seen, key=lambda v: (first_seen[v], "" if v is None else v))
    rates = tuple(
        _rate(case_id, version, per_version[version], rule)
        for case_id, per_version in sorted(by_case.items())
        for version in versions
        if version in per_version
    )
    comparisons: list[CaseComparison] = []
    counts: dict[str, int] = {}
    if compare is not None:
        baseline, candidate = compare
        for case_id, per_version in sorted(by_case.items()):
            b = _rate(case_id, baseline, per_version.get(baseline), rule)
            c = _rate(case_id, candidate, per_version.get(candidate), rule)
            verdict, p = judge(b, c, rule)
            comparisons.append(CaseComparison(case_id, b, c, verdict, p))
            counts[verdict.value] = counts.get(verdict.value, 0) + 1
    return CaseReport(rule, rates, tuple(comparisons), _spend(versions, by_case, spent, price), compare, counts=counts)


def _extra(text: Any) -> dict[str, Any]:
    """A session's ``extra`` column (JSON text, or already a mapping on PostgreSQL) as a dict."""
    if isinstance(text, dict):
        return text
    try:
        value = orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _spend(
    versions: list[str | None], by_case: dict[str, dict[str | None, _Runs]], spent: list[Any], price: PriceFn | None
) -> tuple[VersionSpend, ...]:
    out = []
    for version in versions:
        runs = sum(len(per[version].outcomes) + per[version].errors for per in by_case.values() if version in per)
        tokens_in = tokens_out = 0
        cost: float | None = None
        unpriced: list[str] = []
        for v, model, tin, tout in spent:
            if v != version:
                continue
            tokens_in += int(tin or 0)
            tokens_out += int(tout or 0)
            known = price(model, int(tin or 0), int(tout or 0)) if price is not None and model else None
            if known is None:
                unpriced.append(model or "(no model)")
            else:
                cost = (cost or 0.0) + known
        out.append(VersionSpend(version, runs, tokens_in, tokens_out, cost, tuple(sorted(unpriced))))
    return tuple(out)
