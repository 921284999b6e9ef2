"""The statistics behind per-case verdicts, in exact arithmetic: Fisher's exact test and the Wilson interval.

Both are closed forms over counts, computed with the standard library so verdicts work in a default
install (no SciPy; the dev suite checks both against SciPy on generated inputs, ``tests/store/test_stats.py``):

- ``fisher_p``: the two-sided p-value of Fisher's exact test on the 2×2 table of passes and fails is
  the probability, under the hypergeometric law of the table with its margins fixed, of every table
  at most as likely as the observed one. The probabilities share one denominator, C(N, n), so they are
  compared as the integers C(K, x)·C(N−K, n−x), exactly: ties (the edge a floating-point version must
  guess at with a tolerance) are ties.
- ``wilson``: the Wilson score interval, (2np + z² ± z·√(z² + 4npq)) / 2(n + z²) with z the normal
  quantile of the two-sided level (``statistics.NormalDist``); 0 and 1 exactly at no and all passes.

``pass_hat_k`` is the unbiased estimator of pass^k (τ-bench): of ``runs`` runs of which ``passes``
passed, the share of the k-subsets in which every run passed, C(passes, k) / C(runs, k).
"""

from __future__ import annotations

import math
from fractions import Fraction
from statistics import NormalDist

__all__ = ["fisher_p", "pass_hat_k", "wilson"]


def wilson(passes: int, runs: int, confidence: float) -> tuple[float, float] | None:
    """The Wilson score interval of a pass rate at ``confidence``; None without runs."""
    if runs <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + 0.5 * confidence)
    p = passes / runs
    denominator = 2 * (runs + z * z)
    center = (2 * runs * p + z * z) / denominator
    half = z * math.sqrt(z * z + 4 * runs * p * (1 - p)) / denominator
    low = 0.0 if passes == 0 else max(0.0, center - half)  # exact at the ends, where rounding leaves 1 - 2⁻⁵³
    high = 1.0 if passes == runs else min(1.0, center + half)
    return low, high


def fisher_p(passes_a: int, runs_a: int, passes_b: int, runs_b: int) -> float:
    """The two-sided p-value of Fisher's exact test that two pass rates are the same."""
    total, passes = runs_a + runs_b, passes_a + passes_b

    def weight(x: int) -> int:  # tables with x passes in a, times C(total, runs_a)
        return math.comb(passes, x) * math.comb(total - passes, runs_a - x)

    observed = weight(passes_a)
    low, high = max(0, runs_a - (total - passes)), min(runs_a, passes)
    tail = sum(w for w in map(weight, range(low, high + 1)) if w <= observed)
    return min(1.0, float(Fraction(tail, math.comb(total, runs_a))))


def pass_hat_k(passes: int, runs: int, k: int) -> float | None:
    """The unbiased estimate that k fresh runs all pass; None with fewer than k runs."""
    if k < 1 or runs < k:
        return None
    return math.comb(passes, k) / math.comb(runs, k)
