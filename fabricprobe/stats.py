"""Statistics of one point's raw samples (iterations × ranks, NaN where a rank does not time).

An iteration's time is the slowest rank's time in it (max over ranks), as nccl-tests -I and
ReproMPI define it; OMB's numbers (per-rank means, then avg/min/max over ranks) are derived
from the same samples so both can be quoted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

CONFIDENCE_Z = 1.959963984540054  # 95%


@dataclass(frozen=True)
class Summary:
    n: int
    min_s: float
    median_s: float
    mean_s: float
    p90_s: float
    p99_s: float
    max_s: float
    std_s: float
    cv: float
    ci_low_s: float  # 95% confidence interval of the median (distribution-free)
    ci_high_s: float
    slowest_rank: int  # the rank that was slowest in the most iterations
    osu_avg_s: float  # OMB: mean over ranks of each rank's mean
    osu_min_s: float  # OMB -f: min over ranks of each rank's mean
    osu_max_s: float  # OMB -f: max over ranks of each rank's mean

    def as_dict(self) -> dict:
        return asdict(self)


def rel_halfwidth(lo: float, hi: float, median: float) -> float:
    """Half the median's confidence interval relative to the median (0.02 = ±2%): the noise every
    decision (when to stop repeating, which algorithm wins, whether two runs differ) is held against."""
    if not np.isfinite(median) or median <= 0:
        return 0.0 if lo == hi else math.inf
    return (hi - lo) / (2.0 * median)


def point_noise(point: dict) -> float:
    """rel_halfwidth of a stored point (its ci_low_s, ci_high_s and median_s)."""
    return rel_halfwidth(point["ci_low_s"], point["ci_high_s"], point["median_s"])


def median_ci(sorted_values: np.ndarray, z: float = CONFIDENCE_Z) -> tuple[float, float]:
    """Order-statistic confidence interval of the median (binomial, normal approximation)."""
    n = sorted_values.size
    if n == 0:
        return math.nan, math.nan
    half = z * math.sqrt(n) / 2.0
    lo = max(int(math.floor(n / 2.0 - half)), 0)
    hi = min(int(math.ceil(n / 2.0 + half)), n - 1)
    return float(sorted_values[lo]), float(sorted_values[hi])


def median_ci_exact(sorted_values: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval of the median for few values: [x(k), x(n+1-k)] with the largest k whose
    exact binomial coverage is still at least `level`; None when even [min, max] covers less (n < 6 at
    95%: [min, max] of 5 values covers the median only 93.75% of the time). For ratios of a handful of
    paired repetitions, where the normal approximation of median_ci does not hold."""
    n = sorted_values.size
    best = None
    for k in range(1, n // 2 + 1):
        coverage = 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0**n
        if coverage < level:
            break
        best = (float(sorted_values[k - 1]), float(sorted_values[n - k]))
    return best


def median_ci_rel(times: np.ndarray) -> float:
    """Relative half-width of the median's confidence interval, from per-iteration times."""
    ordered = np.sort(times[np.isfinite(times)])
    if ordered.size == 0:
        return math.inf
    lo, hi = median_ci(ordered)
    return rel_halfwidth(lo, hi, float(np.median(ordered)))


def per_iteration(samples: np.ndarray) -> np.ndarray:
    """The slowest timing rank's time in each iteration."""
    timed = ~np.all(np.isnan(samples), axis=1)
    return np.nanmax(samples[timed], axis=1) if timed.any() else np.empty(0)


def summarize(samples: np.ndarray) -> Summary:
    """Statistics of an (iterations × ranks) sample matrix."""
    samples = np.asarray(samples, dtype=np.float64)
    if samples.ndim != 2:
        raise ValueError("samples must be a 2-D (iterations × ranks) array")
    times = per_iteration(samples)
    if times.size == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, -1, nan, nan, nan)
    ordered = np.sort(times)
    lo, hi = median_ci(ordered)
    mean = float(times.mean())
    std = float(times.std(ddof=1)) if times.size > 1 else 0.0
    timing_ranks = ~np.all(np.isnan(samples), axis=0)
    rank_means = np.nanmean(samples[:, timing_ranks], axis=0)
    slowest_per_iter = np.nanargmax(np.where(np.isnan(samples), -np.inf, samples), axis=1)
    slowest = int(np.bincount(slowest_per_iter, minlength=samples.shape[1]).argmax())
    p90, p99 = np.percentile(ordered, [90, 99])
    return Summary(
        n=int(times.size),
        min_s=float(ordered[0]),
        median_s=float(np.median(ordered)),
        mean_s=mean,
        p90_s=float(p90),
        p99_s=float(p99),
        max_s=float(ordered[-1]),
        std_s=std,
        cv=std / mean if mean > 0 else math.nan,
        ci_low_s=lo,
        ci_high_s=hi,
        slowest_rank=slowest,
        osu_avg_s=float(rank_means.mean()),
        osu_min_s=float(rank_means.min()),
        osu_max_s=float(rank_means.max()),
    )


def bandwidths(nbytes: int, seconds: float, factor: float) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 bytes), as nccl-tests defines them."""
    if not np.isfinite(seconds) or seconds <= 0 or nbytes == 0:
        return 0.0, 0.0
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * factor


# Student's t, the two-sided 95% critical value (the 0.975 quantile) for 1-30 degrees of freedom (any
# statistics table); more degrees of freedom use 30's, which is within 2.5% of the normal 1.96.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)  # fmt: skip


def welch_differ(a: list[float], b: list[float]) -> bool:
    """Whether the means of two samples (at least 2 each) differ at 95%, two-sided, by Welch's t-test
    (unequal variances; its fractional degrees of freedom rounded down, which only widens the test)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.size < 2 or y.size < 2:
        raise ValueError("Welch's t-test needs two values a side")
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    gap = abs(float(x.mean() - y.mean()))
    if va + vb == 0:
        return gap > 0
    t = gap / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    return t > T_975[min(max(int(df), 1), len(T_975)) - 1]
