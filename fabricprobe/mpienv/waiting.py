"""Waiting for other ranks without taking a core from them.

A rank that waits inside an MPI collective polls (Open MPI and MPICH spin on their progress engine),
so a rank waiting while rank 0 alone works (opens the results file, asks the library how it was
built, writes a run's start) burns a core the whole time; where ranks share cores its polling also
takes time from the ranks being measured (seen in the fabric lab, 4 ranks on 2 cores: one rank's
reduction blocks took 2.0 to 7.8 ms depending on who was polling beside it). What it costs a launch:
docs/scale.md, "A launch". Rank 0 deciding for all (root_decides) waits so too."""

from __future__ import annotations

import time
from typing import Any, Callable

from fabricprobe.errors import DamagedError, UsageError

QUIET_POLL_S = 0.0005  # the most a quiet barrier adds to the wait


def quiet_barrier(comm: Any) -> None:
    """A barrier that sleeps while it waits (MPI_Ibarrier, tested every QUIET_POLL_S)."""
    wait_sleeping(comm.Ibarrier())


def wait_sleeping(request: Any, spin_s: float = 0.0, poll_s: float = QUIET_POLL_S) -> None:
    """Until the non-blocking `request` completes: tested without a pause for `spin_s` (for what is
    usually that close), then every `poll_s` asleep, leaving the core to the ranks that work."""
    until = time.perf_counter() + spin_s
    while not request.Test():
        if time.perf_counter() > until:
            time.sleep(poll_s)


def root_decides(comm: Any, decide: Callable[[], Any]) -> Any:
    """Run decide() on rank 0 only (it opens a file: the others need not, and at scale should not);
    its UsageError (or result) reaches every rank, of the same class (a damaged file's DamagedError
    exits EXIT_DAMAGED on every rank). The others sleep meanwhile."""
    outcome: tuple[str | None, Any, bool] = (None, None, False)
    if comm.rank == 0:
        try:
            outcome = (None, decide(), False)
        except UsageError as exc:
            outcome = (str(exc), None, isinstance(exc, DamagedError))
    quiet_barrier(comm)
    message, value, damaged = comm.bcast(outcome, root=0)
    if message is not None:
        raise (DamagedError if damaged else UsageError)(message)
    return value
