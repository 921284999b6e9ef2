"""The verdicts' exact arithmetic against SciPy (a dev dependency only): Fisher's exact test, two-sided,
and the Wilson score interval, on generated tables and levels, plus the edges a floating-point version
decides by tolerance (ties in the two-sided tail, all-pass and all-fail margins)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from otel_agent_replay.store._stats import fisher_p, wilson

Counts = st.integers(min_value=1, max_value=60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))


def _scipy_fisher(pa: int, na: int, pb: int, nb: int) -> float:
    return float(stats.fisher_exact([[pa, na - pa], [pb, nb - pb]], alternative="two-sided").pvalue)


@settings(max_examples=400, deadline=None)
@given(a=Counts, b=Counts)
def test_fisher_matches_scipy_on_generated_tables(a: tuple[int, int], b: tuple[int, int]) -> None:
    ours, theirs = fisher_p(*a, *b), _scipy_fisher(*a, *b)
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12), (a, b)


@pytest.mark.parametrize(
    ("a", "b", "exact"),
    [
        ((5, 5), (0, 5), 2 / 252),  # the two most extreme tables of 252
        ((5, 5), (5, 5), 1.0),  # a zero margin: one table only
        ((0, 7), (0, 3), 1.0),
        ((3, 6), (3, 6), 1.0),  # the mode itself
        ((2, 4), (2, 4), 1.0),  # symmetric margins: ties on both sides of the mode count
        ((12, 12), (1, 12), 2 * (math.comb(12, 12) * math.comb(12, 1)) / math.comb(24, 13)),
    ],
)
def test_fisher_at_its_edges(a: tuple[int, int], b: tuple[int, int], exact: float) -> None:
    assert fisher_p(*a, *b) == pytest.approx(exact, rel=1e-12)
    assert fisher_p(*a, *b) == pytest.approx(_scipy_fisher(*a, *b), rel=1e-9)


@settings(max_examples=400, deadline=None)
@given(counts=Counts, confidence=st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999]) | st.floats(0.01, 0.999))
def test_wilson_matches_scipy_on_generated_counts(counts: tuple[int, int], confidence: float) -> None:
    passes, runs = counts
    theirs = stats.binomtest(passes, runs).proportion_ci(confidence_level=confidence, method="wilson")
    low, high = wilson(passes, runs, confidence) or (math.nan, math.nan)
    assert low == pytest.approx(max(0.0, float(theirs.low)), abs=1e-12)
    assert high == pytest.approx(min(1.0, float(theirs.high)), abs=1e-12)
    assert 0.0 <= low <= passes / runs <= high <= 1.0


def test_the_verdicts_import_no_scipy() -> None:
    code = (
        "import sys; import otel_agent_replay.store._verdicts as v; "
        "v.judge; from otel_agent_replay.store._stats import fisher_p, wilson; fisher_p(5, 5, 0, 5); "
        "wilson(3, 5, 0.95); print('scipy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "False"
