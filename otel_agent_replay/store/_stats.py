"""The statistics behind per-case verdicts, from SciPy: the Wilson interval and Fisher's exact test.

SciPy is an optional dependency (``pip install 'otel-agent-replay[stats]'``), imported when a
report first needs it, so the SDK's import and a report without repeated runs never pay for it.
``pass_hat_k`` is the unbiased estimator of pass^k (τ-bench): of ``runs`` runs of which
``passes`` passed, the share of the k-subsets in which every run passed, C(passes, k) / C(runs, k).
"""

from __future__ import annotations

import importlib
import math
from functools import cache
from typing import Any

from otel_agent_replay.core import ConfigurationError

__all__ = ["fisher_p", "pass_hat_k", "wilson"]


@cache
def _scipy_stats() -> Any:
    try:
        return importlib.import_module("scipy.stats")
    except ImportError as err:
        raise ConfigurationError(
            "per-case pass rates and verdicts need SciPy (Wilson intervals, Fisher's exact test), which is not "
            "installed: pip install 'otel-agent-replay[stats]'"
        ) from err


def wilson(passes: int, runs: int, confidence: float) -> tuple[float, float] | None:
    """The Wilson score interval of a pass rate at ``confidence``; None without runs."""
    if runs <= 0:
        return None
    interval = _scipy_stats().binomtest(passes, runs).proportion_ci(confidence_level=confidence, method="wilson")
    return float(interval.low), float(interval.high)


def fisher_p(passes_a: int, runs_a: int, passes_b: int, runs_b: int) -> float:
    """The two-sided p-value of Fisher's exact test that two pass rates are the same."""
    table = [[passes_a, runs_a - passes_a], [passes_b, runs_b - passes_b]]
    return float(_scipy_stats().fisher_exact(table, alternative="two-sided").pvalue)


def pass_hat_k(passes: int, runs: int, k: int) -> float | None:
    """The unbiased estimate that k fresh runs all pass; None with fewer than k runs."""
    if k < 1 or runs < k:
        return None
    return math.comb(passes, k) / math.comb(runs, k)
