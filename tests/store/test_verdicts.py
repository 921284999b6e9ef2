"""The verdict rule at its edges: too few runs, the test's direction, pass^k, the rule's checks."""

from __future__ import annotations

import math

import pytest

from otel_agent_replay import ConfigurationError
from otel_agent_replay.store import CaseRate, CaseVerdict, VerdictRule
from otel_agent_replay.store._stats import fisher_p, pass_hat_k, wilson
from otel_agent_replay.store._verdicts import judge


def _rate(passes: int, runs: int) -> CaseRate:
    return CaseRate("c", "v", runs, passes, passes / runs if runs else None, None, None, None)


@pytest.mark.parametrize(
    ("baseline", "candidate", "verdict"),
    [
        ((4, 4), (4, 5), CaseVerdict.UNKNOWN),  # four runs: below min_runs=5
        ((5, 5), (0, 5), CaseVerdict.REGRESSED),  # p = 2/252
        ((0, 5), (5, 5), CaseVerdict.FIXED),
        ((5, 5), (4, 5), CaseVerdict.FLAKY),  # one failure in ten: within chance
        ((5, 5), (5, 5), CaseVerdict.PASS),
        ((0, 6), (0, 5), CaseVerdict.FAIL),
        ((5, 5), (3, 5), CaseVerdict.FLAKY),  # p = 0.44
    ],
)
def test_the_verdict_of_a_case(baseline: tuple[int, int], candidate: tuple[int, int], verdict: CaseVerdict) -> None:
    assert judge(_rate(*baseline), _rate(*candidate), VerdictRule())[0] == verdict


def test_a_stricter_level_turns_a_regression_into_flaky() -> None:
    b, c = _rate(18, 20), _rate(12, 20)
    p = fisher_p(18, 20, 12, 20)
    assert 0.01 < p < 0.1
    assert judge(b, c, VerdictRule(alpha=0.1))[0] == CaseVerdict.REGRESSED
    assert judge(b, c, VerdictRule(alpha=0.01))[0] == CaseVerdict.FLAKY


def test_pass_k_and_the_wilson_interval() -> None:
    assert pass_hat_k(27, 30, 5) == pytest.approx(math.comb(27, 5) / math.comb(30, 5))
    assert pass_hat_k(9, 10, 10) == 0.0 and pass_hat_k(10, 10, 10) == 1.0 and pass_hat_k(3, 4, 5) is None
    low, high = wilson(9, 10, 0.95) or (0.0, 0.0)
    assert low == pytest.approx(0.5958, abs=1e-4) and high == pytest.approx(0.9821, abs=1e-4)
    assert wilson(0, 0, 0.95) is None


@pytest.mark.parametrize("field", ["alpha", "confidence", "pass_k", "min_runs"])
def test_the_rule_refuses_numbers_out_of_range(field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        VerdictRule(**{field: 0})
