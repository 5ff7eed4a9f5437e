"""What the harness times: a Batch, a callable that runs a call once per element of `out` and writes
each iteration's time there. Algorithms are bound into Batches, so the harness times, checks and
stores an algorithm without knowing which it holds."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fabricprobe.timing import loops

Batch = Callable[[np.ndarray, int], None]
Call = Callable[[], object]


class TimerUnavailable(Exception):
    """The requested timer cannot time this algorithm (e.g. native for a Python algorithm)."""


def python_batch(call: Call, comm: Any) -> Batch:
    """`call` timed with MPI_Wtime around each Python invocation (the Python timer)."""
    from mpi4py import MPI

    barrier, wtime = comm.Barrier, MPI.Wtime

    def batch(out: np.ndarray, mode: int) -> None:
        loops.python_timed_calls(call, barrier, wtime, mode, out)

    return batch


def idle(out: np.ndarray, mode: int) -> None:
    """The Batch of a rank that sits a point out: its samples read as "not timed"."""
    out.fill(np.nan)
