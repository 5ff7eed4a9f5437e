"""MPI initialisation with an explicit thread level, and how long the start-up took.

mpi4py asks for MPI_THREAD_MULTIPLE unless told otherwise, which moves MPICH onto slower
small-message paths (~5x at 8 B). fabricprobe always requests a level explicitly and records
what the library provided.

MPI_Init_thread is called here, not inside mpi4py's import, so that its time is MPI_Init's alone (as
OMB's osu_init measures it: the library is loaded already) and the time to the first collective (a
barrier right after it, where libraries that connect lazily pay for it) can be read beside it. The
start-up of a job is what a site's users wait for before every run at scale.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mpi4py import MPI as MPIModule

THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")
STARTUP: dict[str, float] = {}  # this process: init_s (MPI_Init_thread), first_collective_s (init to a barrier's end)


def init_mpi(thread_level: str = "single") -> "MPIModule":
    """Import mpi4py's MPI module, initialising MPI at the requested thread level."""
    if thread_level not in THREAD_LEVELS:
        raise ValueError(f"unknown thread level {thread_level!r}")
    import mpi4py

    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.thread_level = thread_level
        # Our own error handling: MPI errors become Python exceptions, not silent aborts (mpi4py sets
        # MPI_ERRORS_RETURN at MPI_Init_thread, called below or by its import alike).
        mpi4py.rc.errors = "exception"
        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = True
    from mpi4py import MPI

    if not MPI.Is_initialized():
        levels = (MPI.THREAD_SINGLE, MPI.THREAD_FUNNELED, MPI.THREAD_SERIALIZED, MPI.THREAD_MULTIPLE)
        started = time.perf_counter()
        MPI.Init_thread(levels[THREAD_LEVELS.index(thread_level)])
        STARTUP["init_s"] = time.perf_counter() - started
    return MPI


def first_collective(comm: Any) -> None:
    """Time the job's first collective (a barrier) right after MPI_Init: STARTUP's first_collective_s
    is MPI_Init plus it, from this rank's start of MPI_Init to the barrier's end (call once, on every
    rank, before anything else communicates)."""
    if "init_s" in STARTUP and "first_collective_s" not in STARTUP:
        started = time.perf_counter()
        comm.Barrier()
        STARTUP["first_collective_s"] = STARTUP["init_s"] + time.perf_counter() - started


def startup_record(comm: Any) -> dict[str, list[float]]:
    """Every rank's start-up in ms ({} where this process did not start MPI itself); call on every rank."""
    mine = (STARTUP.get("init_s", -1.0), STARTUP.get("first_collective_s", -1.0))
    every = comm.allgather(mine)
    if any(init < 0 for init, _ in every):
        return {}
    return {
        "init_ms": [round(init * 1e3, 3) for init, _ in every],
        "first_collective_ms": [round(first * 1e3, 3) for _, first in every],
    }


def provided_thread_level(MPI: "MPIModule") -> str:
    names = {
        MPI.THREAD_SINGLE: "single",
        MPI.THREAD_FUNNELED: "funneled",
        MPI.THREAD_SERIALIZED: "serialized",
        MPI.THREAD_MULTIPLE: "multiple",
    }
    return names.get(MPI.Query_thread(), str(MPI.Query_thread()))
