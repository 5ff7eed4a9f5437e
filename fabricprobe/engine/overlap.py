"""The overlap of a non-blocking collective with computation, measured as OMB's osu_i* tests do.

After the point (its time is OMB's "Pure Comm.": the call started and waited on at once), every rank
runs the call again `iterations` times, each after a barrier: start it, compute for the pure time, wait
(collectives.library.overlap_batch). Overall is start to completion, Compute the computation alone;

    overlap % = max(0, 100 · (1 − (Overall − Compute) / Pure Comm))

100% means the collective finished entirely behind the computation, 0% that it progressed only in the
wait. OMB averages each rank's means; here each iteration counts its slowest rank (as every
fabricprobe point does) and the medians are taken: the figure a step of a synchronous trainer sees.
The computation's length is the point's median (every rank the same, broadcast from rank 0), where OMB
gives each rank its own mean: a rank that computes less than the others would otherwise read as
overlapping less.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

OVERLAP_ITERATIONS = 100  # at most; as many as the point timed when it timed fewer


@dataclass(frozen=True)
class Overlap:
    overall_s: float  # median over iterations of the slowest rank's start-compute-wait
    compute_s: float  # median over iterations of the slowest rank's computation
    percent: float


def percent(overall_s: float, compute_s: float, pure_s: float) -> float:
    """OMB's overlap: the share of the pure communication time hidden behind the computation."""
    if pure_s <= 0:
        return float("nan")
    return max(0.0, 100.0 * (1.0 - (overall_s - compute_s) / pure_s))


def measure_overlap(
    make_batch: Callable[[float], Callable[[np.ndarray, np.ndarray], None]],
    comm: Any,
    pure_s: float | None,
    iterations: int,
) -> Overlap | None:
    """Run the overlap loop, make_batch(seconds of computation), on every rank of comm (pure_s: the
    point's median, read on rank 0); the result on rank 0, None elsewhere."""
    pure = comm.bcast(pure_s, root=0)
    batch = make_batch(pure)
    n = max(1, min(iterations, OVERLAP_ITERATIONS))
    batch(np.empty(1), np.empty(1))  # one untimed warm-up with the computation in it
    total, computed = np.empty(n), np.empty(n)
    batch(total, computed)
    both = np.concatenate([total, computed])
    gathered = np.empty((comm.size, 2 * n)) if comm.rank == 0 else None
    comm.Gather(both, gathered, root=0)
    if comm.rank != 0:
        return None
    slowest = gathered.max(axis=0)
    overall, compute = float(np.median(slowest[:n])), float(np.median(slowest[n:]))
    return Overlap(overall, compute, percent(overall, compute, pure))
