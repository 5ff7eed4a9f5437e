import math

import numpy as np
import pytest

from fabricprobe.stats import bandwidths, median_ci, per_iteration, summarize


def test_iteration_time_is_the_slowest_rank():
    samples = np.array([[1.0, 3.0], [2.0, 1.0], [5.0, 4.0]])
    np.testing.assert_array_equal(per_iteration(samples), [3.0, 2.0, 5.0])
    s = summarize(samples)
    assert (s.min_s, s.median_s, s.max_s) == (2.0, 3.0, 5.0)
    assert s.mean_s == pytest.approx(10 / 3)
    assert s.slowest_rank in (0, 1)


def test_osu_statistics_are_spreads_of_per_rank_means():
    samples = np.array([[1.0, 10.0], [3.0, 10.0]])  # rank means 2 and 10
    s = summarize(samples)
    assert (s.osu_min_s, s.osu_avg_s, s.osu_max_s) == (2.0, 6.0, 10.0)
    assert s.slowest_rank == 1


def test_ranks_that_do_not_time_are_ignored():
    samples = np.array([[1.0, np.nan, np.nan], [2.0, np.nan, np.nan], [3.0, np.nan, np.nan]])
    s = summarize(samples)
    assert s.median_s == 2.0 and s.osu_avg_s == 2.0 and s.slowest_rank == 0


def test_nothing_timed():
    s = summarize(np.full((3, 2), np.nan))
    assert s.n == 0 and math.isnan(s.median_s)


def test_median_ci_covers_the_median_and_narrows():
    rng = np.random.default_rng(1)
    small = np.sort(rng.lognormal(size=50))
    big = np.sort(rng.lognormal(size=5000))
    lo, hi = median_ci(small)
    assert lo <= np.median(small) <= hi
    blo, bhi = median_ci(big)
    assert (bhi - blo) < (hi - lo)


def test_ci_coverage_is_about_95_percent():
    rng = np.random.default_rng(7)
    true_median = 1.0  # lognormal(0, s) has median 1
    hits = sum(
        lo <= true_median <= hi
        for lo, hi in (median_ci(np.sort(rng.lognormal(sigma=0.5, size=200))) for _ in range(400))
    )
    assert 0.90 <= hits / 400 <= 0.99


def test_bandwidths():
    assert bandwidths(2_000_000_000, 1.0, 1.5) == (2.0, 3.0)
    assert bandwidths(0, 1.0, 1.0) == (0.0, 0.0)
    assert bandwidths(8, float("nan"), 1.0) == (0.0, 0.0)


def test_median_interval_of_few_values_is_exact_or_absent():
    """[min, max] of n values covers the median with probability 1 - 2^(1-n): 93.75% at n = 5, so no 95%
    interval below 6 values; at 9 the interval drops one value from each end (96.1%)."""
    from fabricprobe.stats import median_ci_exact

    assert all(median_ci_exact(np.arange(n, dtype=float)) is None for n in range(6))
    assert median_ci_exact(np.arange(1.0, 7.0)) == (1.0, 6.0)
    assert median_ci_exact(np.arange(1.0, 10.0)) == (2.0, 8.0)


def _before_after_runs(pairs):
    from types import SimpleNamespace

    runs = []
    for base, tuned in pairs:
        for label, t in (("baseline", base), ("tuned", tuned)):
            point = dict(algorithm=f"library:{label}", status="ok", collective="allreduce", nranks=4, bytes=1 << 20)
            runs.append(SimpleNamespace(points=[{**point, "median_s": t}]))
    return runs


def test_before_after_never_collapses_disagreeing_repetitions():
    """The reviewer's case: 2.24× in one repetition, 0.32× in the other was reported as 1.23×."""
    from fabricprobe.tuning.measure.before_after import speedups

    (row,) = speedups(_before_after_runs([(2.24, 1.0), (0.32, 1.0)]), None)
    assert row["verdict"] == "repetitions disagree" and row["ratios"] == [0.32, 2.24] and row["ci_low"] is None
    assert not row["slower"]
    (row,) = speedups(_before_after_runs([(2.0 + i / 10, 1.0) for i in range(6)]), None)
    assert row["verdict"] == "faster" and (row["ci_low"], row["ci_high"]) == pytest.approx((2.0, 2.5))
    (row,) = speedups(_before_after_runs([(1.0, 2.0)] * 3), None)
    assert row["verdict"] == "slower in all 3" and row["slower"]
    (row,) = speedups(_before_after_runs([(1.5, 1.0)] * 5 + [(0.5, 1.0)]), None)
    assert row["verdict"] == "no difference shown"  # the interval [min, max] holds 1
