"""A comparison's headline: the regressed and fixed cases named with their rates and p-values, then the flaky
ones, then the unjudged; without cases, the metrics that changed; never a bare "mixed"; safe text."""

from __future__ import annotations

import orjson

from otel_agent_replay.store import (
    CaseComparison,
    CaseRate,
    CaseReport,
    CaseVerdict,
    EvidenceReport,
    MetricDelta,
    Threshold,
    VerdictRule,
    VersionComparison,
    format_report,
)
from otel_agent_replay.store._stats import fisher_p
from otel_agent_replay.store._verdicts import judge

RULE = VerdictRule()


def _rate(case: str, version: str, passes: int, runs: int, *, errors: int = 0, text: str | None = None) -> CaseRate:
    return CaseRate(
        case, version, runs, passes, passes / runs if runs else None, None, None, None,
        input=text if text is not None else orjson.dumps({"task": case}).decode(), errors=errors,
        judge_errors=("evaluator judge raised KeyError: 'answer'",) if errors else (),
    )  # fmt: skip


def _case(
    case: str, base: tuple[int, int], cand: tuple[int, int], errors: int = 0, text: str | None = None
) -> CaseComparison:
    b = _rate(case, "1", *base, text=text)
    c = _rate(case, "2", *cand, errors=errors, text=text)
    verdict, p = judge(b, c, RULE)
    return CaseComparison(case, b, c, verdict, p)


def _report(*cases: CaseComparison, comparison: VersionComparison | None = None) -> EvidenceReport:
    counts: dict[str, int] = {}
    for c in cases:
        counts[c.verdict.value] = counts.get(c.verdict.value, 0) + 1
    rates = tuple(r for c in cases for r in (c.baseline, c.candidate))
    return EvidenceReport(
        "agent_version", (), comparison, CaseReport(RULE, rates, cases, compared=("1", "2"), counts=counts)
    )


def _delta(metric: str, base: float, cand: float, change: str, threshold: Threshold | None = None) -> MetricDelta:
    regressed = threshold is not None and change == "worse"
    return MetricDelta(metric, base, cand, cand - base, None, change, threshold, regressed)  # type: ignore[arg-type]


def test_regressed_and_fixed_cases_come_first_with_rates_and_p_values_then_flaky_then_the_rest() -> None:
    report = _report(
        _case("flaky-one", (9, 12), (7, 12)),
        _case("quiet", (12, 12), (12, 12)),
        _case("worse", (12, 12), (4, 12)),
        _case("fixed-one", (0, 12), (10, 12)),
        _case("worst", (12, 12), (0, 12)),
        _case("broken", (12, 12), (0, 0), errors=12),
    )
    p_worst, p_worse, p_fixed = fisher_p(12, 12, 0, 12), fisher_p(12, 12, 4, 12), fisher_p(0, 12, 10, 12)
    assert report.headline() == (
        "2 against 1: "
        f'2 regressed: worst {{"task":"worst"}} 100% (12/12) → 0% (0/12), p = {p_worst:.2g}, '
        f'worse {{"task":"worse"}} 100% (12/12) → 33% (4/12), p = {p_worse:.2g}; '
        f'1 fixed: fixed-one {{"task":"fixed-one"}} 0% (0/12) → 83% (10/12), p = {p_fixed:.2g}; '
        f'1 flaky: flaky-one {{"task":"flaky-one"}} 75% (9/12) → 58% (7/12), p = {fisher_p(9, 12, 7, 12):.2g}; '
        """1 error (not judged): broken {"task":"broken"}: evaluator judge raised KeyError: 'answer'; 1 pass"""
    )
    md = report.headline("markdown") or ""
    assert md.startswith("`2` against `1`: ❌ 2 regressed: `worst` `{")
    assert "; ✅ 1 fixed: `fixed-one`" in md and "; ⚠️ 1 flaky: `flaky-one`" in md
    text = format_report(report, "md")
    assert text.splitlines()[2] == f"**{md}**", "the Markdown report opens with it"
    assert orjson.loads(format_report(report, "json"))["headline"] == report.headline()


def test_many_cases_are_named_five_at_a_time_and_counted() -> None:
    report = _report(*(_case(f"case-{n}", (12, 12), (0, 12)) for n in range(8)))
    said = report.headline() or ""
    assert said.startswith("2 against 1: 8 regressed: case-0 ") and said.endswith(", and 3 more")
    assert said.count("p = ") == 5


def test_without_cases_the_metrics_that_changed_are_named_never_mixed() -> None:
    limit = Threshold("tool_success_rate", 0.05)
    deltas = (
        _delta("tool_success_rate", 1.0, 0.33, "worse", limit),
        _delta("latency_ms_avg", 120.0, 100.0, "better"),
        _delta("tokens_in", 100, 130, "worse"),
        _delta("sessions", 3, 3, "same"),
    )
    mixed = VersionComparison("1", "2", deltas, "regressed")
    said = EvidenceReport("agent_version", (), mixed).headline()
    assert said == (
        "2 against 1: regressed past a threshold: tool_success_rate -67.0 pt (tool_success_rate=0.05); "
        "worse: tokens_in +30; better: latency_ms_avg -20.0 ms"
    )
    plain = VersionComparison("1", "2", deltas[1:], "mixed")
    assert EvidenceReport("agent_version", (), plain).headline() == (
        "2 against 1: worse: tokens_in +30; better: latency_ms_avg -20.0 ms"
    )
    md = format_report(EvidenceReport("agent_version", (), plain), "md")
    assert "mixed" not in md and "Metrics: worse: `tokens_in` +30; better: `latency_ms_avg` -20.0 ms." in md
    same = VersionComparison("1", "2", deltas[3:], "unchanged")
    assert EvidenceReport("agent_version", (), same).headline() == "2 against 1: no metric changed"
    assert EvidenceReport("agent_version", ()).headline() is None


def test_cases_that_did_not_change_say_so_and_a_metric_past_its_threshold_follows() -> None:
    limit = Threshold("latency_ms_avg", 10.0, relative=True)
    slower = VersionComparison("1", "2", (_delta("latency_ms_avg", 100.0, 150.0, "worse", limit),), "regressed")
    report = _report(_case("a", (12, 12), (12, 12)), _case("b", (0, 12), (0, 12)), comparison=slower)
    assert report.headline() == (
        "2 against 1: no case changed beyond chance; 1 pass, 1 fail; "
        "regressed past a threshold: latency_ms_avg +50.0 ms (latency_ms_avg=10%)"
    )


def test_stored_text_in_the_headline_cannot_act_on_a_terminal_or_end_a_code_span() -> None:
    sneaky = "\u202eevil\x1b[2J `code` | cell\nnext line"
    report = _report(_case("c\u202e1", (12, 12), (0, 12), text=sneaky))
    said = report.headline() or ""
    assert "\u202e" not in said and "\x1b" not in said and "\n" not in said
    assert "\\u202e" in said and "\\x1b" in said
    md = report.headline("markdown") or ""
    assert md.count("`") == 2 * 4, "four code spans (two versions, the id, the input), none broken"
    assert "|" not in md.split(": ", 1)[1]
    assert CaseVerdict.REGRESSED.value in said
