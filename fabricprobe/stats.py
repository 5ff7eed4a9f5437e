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


# A point of up to FULL_RANKS ranks keeps every rank's time of every iteration; beyond, what the
# statistics, the OMB columns and the slowest-rank diagnosis need, so that its bytes stop growing with
# the job (docs/scale.md): each iteration's slowest time, each rank's summary, and the samples of the
# SLOWEST_KEPT ranks that were slowest in the most iterations.
FULL_RANKS = 16
SLOWEST_KEPT = 2
RANK_FIELDS = ("mean_s", "min_s", "median_s", "max_s", "slowest_iterations")


@dataclass(frozen=True)
class PointTimes:
    """A point's timings as stored. Full: `samples` is iterations × ranks (NaN where a rank does not
    time), `ranks` None. Reduced: `samples` is iterations × len(ranks), the kept ranks' times;
    `maxima` each iteration's slowest time (NaN where no rank timed); `per_rank` ranks × RANK_FIELDS
    (NaN for a rank that does not time; its count of iterations in which it was the slowest)."""

    samples: np.ndarray
    ranks: tuple[int, ...] | None = None
    maxima: np.ndarray | None = None
    per_rank: np.ndarray | None = None

    @property
    def full(self) -> bool:
        return self.ranks is None

    def iteration_times(self) -> np.ndarray:
        """The slowest timing rank's time in each timed iteration."""
        if self.full:
            return per_iteration(self.samples)
        return self.maxima[~np.isnan(self.maxima)]


def slowest_ranks(samples: np.ndarray) -> np.ndarray:
    """Each iteration's slowest rank (the lowest on ties; rank 0 where none timed), as MPI_MAXLOC
    gives it."""
    return np.argmax(np.where(np.isnan(samples), -np.inf, samples), axis=1)


def rank_summary(mine: np.ndarray) -> np.ndarray:
    """RANK_FIELDS but the last of one rank's times (NaN where it never timed)."""
    timed = mine[~np.isnan(mine)]
    if timed.size == 0:
        return np.full(4, np.nan)
    return np.array([timed.mean(), timed.min(), np.median(timed), timed.max()])


def rank_table(samples: np.ndarray) -> np.ndarray:
    """Every rank's RANK_FIELDS from every rank's samples."""
    counts = np.bincount(slowest_ranks(samples), minlength=samples.shape[1])
    return np.column_stack([np.array([rank_summary(col) for col in samples.T]).reshape(-1, 4), counts])


def reduced(samples: np.ndarray, keep: int = SLOWEST_KEPT) -> PointTimes:
    """What a point of many ranks keeps, from every rank's samples: as the harness reduces it (a test
    compares the two)."""
    samples = np.asarray(samples, dtype=np.float64)
    timed = ~np.all(np.isnan(samples), axis=1)
    maxima = np.full(samples.shape[0], np.nan)
    maxima[timed] = per_iteration(samples)
    per_rank = rank_table(samples)
    kept = kept_ranks(per_rank, keep)
    return PointTimes(np.ascontiguousarray(samples[:, kept]), tuple(kept), maxima, per_rank)


def kept_ranks(per_rank: np.ndarray, keep: int = SLOWEST_KEPT) -> list[int]:
    """The timing ranks slowest in the most iterations, then by mean (the lower rank on ties)."""
    timing = [r for r in range(per_rank.shape[0]) if not np.isnan(per_rank[r, 0])]
    return sorted(sorted(timing, key=lambda r: (-per_rank[r, 4], -per_rank[r, 0], r))[:keep])


def summarize(samples: "np.ndarray | PointTimes") -> Summary:
    """Statistics of an (iterations × ranks) sample matrix, or of a point's stored timings."""
    if isinstance(samples, PointTimes) and not samples.full:
        return _summary_of(samples.iteration_times(), samples.per_rank)
    samples = np.asarray(samples.samples if isinstance(samples, PointTimes) else samples, dtype=np.float64)
    if samples.ndim != 2:
        raise ValueError("samples must be a 2-D (iterations × ranks) array")
    return _summary_of(per_iteration(samples), rank_table(samples))


def _summary_of(iterations: np.ndarray, per_rank: np.ndarray) -> Summary:
    if iterations.size == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, -1, nan, nan, nan)
    ordered = np.sort(iterations)
    lo, hi = median_ci(ordered)
    mean = float(iterations.mean())
    std = float(iterations.std(ddof=1)) if iterations.size > 1 else 0.0
    rank_means = per_rank[:, 0][~np.isnan(per_rank[:, 0])]
    p90, p99 = np.percentile(ordered, [90, 99])
    return Summary(
        n=int(iterations.size),
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
        slowest_rank=int(per_rank[:, 4].argmax()),
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
