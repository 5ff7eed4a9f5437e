"""Time one point: warm-up, then batches of timed iterations until the median is known well
enough (its 95% confidence interval within ci_target) or a cap is hit, as SKaMPI and IMB do.

All ranks run the same number of iterations; after each batch rank 0 collects every rank's samples
(up to stats.FULL_RANKS ranks) or, beyond, each iteration's slowest time and rank (one MPI_MAXLOC
reduction), decides, and tells the others. Samples never leave the timed loop mid-batch. Beyond
FULL_RANKS each rank keeps its own samples and sends rank 0 their summary at the end, and the kept
(slowest) ranks their samples: rank 0 never holds iterations × ranks values (stats.PointTimes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricprobe.engine import faults
from fabricprobe.engine.collect import collector
from fabricprobe.stats import FULL_RANKS, SLOWEST_KEPT, PointTimes, median_ci_rel
from fabricprobe.timing import loops, windows
from fabricprobe.timing.batch import Batch

STOP_CONVERGED = "converged"  # the median's CI became narrower than the target
STOP_TIME_CAP = "time_cap"  # the per-point time budget ran out first
STOP_ITERATION_CAP = "iteration_cap"
STOP_FIXED = "fixed"  # adaptivity off (ci_target 0): exactly the requested iterations

# Rank 0 holds a point's samples (iterations × stored columns, float64) while deciding and writes them:
# bound the matrix so that a fast fabric cannot fill rank 0's memory (64 MiB).
SAMPLE_CAP = 8 << 20


def stored_columns(nranks: int) -> int:
    """The float64 values rank 0 holds per iteration: every rank's, or the maxima and the kept ranks'."""
    return nranks if nranks <= FULL_RANKS else 1 + SLOWEST_KEPT


def iteration_cap(budget: "Budget", nranks: int) -> int:
    """The most iterations a point may take on `nranks` ranks."""
    return max(budget.min_iterations, min(budget.max_iterations, SAMPLE_CAP // stored_columns(max(nranks, 1))))


@dataclass(frozen=True)
class Budget:
    iterations: int  # size of the first timed batch
    warmup: int
    max_time: float  # seconds of timed iterations per point before giving up on the target
    ci_target: float  # relative half-width of the median's 95% CI; 0 disables adaptivity
    min_iterations: int = 10
    max_iterations: int = 1_000_000


@dataclass
class Measurement:
    times: PointTimes | None  # on rank 0, None elsewhere
    stop_reason: str
    batches: int
    iterations: int
    window_s: float = 0.0  # window mode: the last batch's window width
    windows_missed: int = 0  # window mode: windows some rank reached late (left untimed on every rank)


def _first_batch(budget: Budget, per_call: float) -> int:
    if budget.ci_target <= 0:
        return budget.iterations
    if per_call > 0 and per_call * budget.iterations > budget.max_time:
        return max(budget.min_iterations, int(budget.max_time / per_call))
    return budget.iterations


def measure(batch: Batch, comm: Any, budget: Budget, mode: int) -> Measurement:
    """Run warm-up and timed batches of `batch` on every rank of `comm`."""
    from mpi4py import MPI

    wtime = MPI.Wtime
    windowed = mode == loops.WINDOW
    t0 = wtime()
    if budget.warmup > 0 or windowed:  # window mode sizes its windows from the warm-up: at least one call
        batch(np.empty(max(budget.warmup, 1)), loops.BARRIER if windowed else mode)
    per_call = (wtime() - t0) / max(budget.warmup, 1)
    # Every rank must size the batches the same way: agree on the slowest estimate.
    per_call = comm.allreduce(per_call if budget.warmup > 0 or windowed else 0.0, op=MPI.MAX)
    clock = windows.clock() if windowed else None
    if windowed and clock is None:
        raise RuntimeError("window mode needs the sweep's synchronized clocks (timing.windows.set_clock)")
    width = max(windows.WIDTH_FACTOR * per_call, windows.MIN_WIDTH)
    missed = 0

    cap = iteration_cap(budget, comm.size)
    n = min(_first_batch(budget, per_call), cap)
    root = comm.rank == 0
    kept = collector(comm, MPI, windowed)
    times: list[np.ndarray] = []  # rank 0: each batch's per-iteration times (slowest rank)
    total = batches = 0
    started = wtime()
    reason = STOP_FIXED
    redone = 0  # window batches that missed every window and were run again
    while n > 0:
        local = np.full(n, np.nan)  # a slot a loop does not write reads as "not timed", never as stale memory
        if windowed:  # every rank's clock reading for the same global moments
            windows.refresh(comm, clock)
            first = comm.bcast(clock.now() + max(windows.LEAD, width) if root else None, root=0)
            local = faults.late_windows(comm.rank, clock.starts(first, width, n), batches + redone)
        batch(local, mode)
        faults.plant_times(local)
        late = kept.collect(local)  # a window some rank reached late: untimed on every rank
        redo = False
        if root and windowed:
            redo = bool(late.all()) and redone < windows.REDO_MAX
            if not redo:
                missed += int(late.sum())
            if late.mean() > windows.MISSED_MAX:
                width *= 2
            if redo:
                width = max(width, windows.REDO_SPAN / n)
        if windowed:
            width, redo = comm.bcast((width, redo), root=0)
            if redo:  # no window kept: nothing measured is dropped; the same batch again, wider windows
                redone += 1
                continue
        total += n
        batches += 1
        next_n = 0
        these = kept.keep(local, late)
        if root:
            times.append(these)  # decide on these, never re-reducing all samples
            next_n, reason = _decide(np.concatenate(times), budget, total, wtime() - started, cap)
        n, reason = comm.bcast((next_n, reason), root=0)
    point_times = kept.times()
    if windowed:
        missed = comm.bcast(missed, root=0)
    return Measurement(point_times, reason, batches, total, width if windowed else 0.0, missed)


def _decide(times: np.ndarray, budget: Budget, total: int, elapsed: float, cap: int) -> tuple[int, str]:
    """(size of the next batch, reason): 0 means stop for that reason."""
    if budget.ci_target <= 0:
        return 0, STOP_FIXED if total >= budget.iterations else STOP_ITERATION_CAP
    if median_ci_rel(times) <= budget.ci_target:
        return 0, STOP_CONVERGED
    if elapsed >= budget.max_time:
        return 0, STOP_TIME_CAP
    if total >= cap:
        return 0, STOP_ITERATION_CAP
    per_iteration = elapsed / total
    fits = int((budget.max_time - elapsed) / per_iteration) if per_iteration > 0 else total
    # Double the sample while time allows; never schedule a batch that overruns the budget by much.
    n = min(total, cap - total, max(fits, budget.min_iterations))
    return (n, STOP_TIME_CAP) if n > 0 else (0, STOP_TIME_CAP)
