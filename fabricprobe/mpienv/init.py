"""MPI initialisation with an explicit thread level.

mpi4py asks for MPI_THREAD_MULTIPLE unless told otherwise, which moves MPICH onto slower
small-message paths (~5x at 8 B). fabricprobe always requests a level explicitly and records
what the library provided.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpi4py import MPI as MPIModule

THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")


def init_mpi(thread_level: str = "single") -> "MPIModule":
    """Import mpi4py's MPI module, initialising MPI at the requested thread level."""
    if thread_level not in THREAD_LEVELS:
        raise ValueError(f"unknown thread level {thread_level!r}")
    import mpi4py

    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.thread_level = thread_level
        # Our own error handling: MPI errors become Python exceptions, not silent aborts.
        mpi4py.rc.errors = "exception"
    from mpi4py import MPI

    return MPI


def provided_thread_level(MPI: "MPIModule") -> str:
    names = {
        MPI.THREAD_SINGLE: "single",
        MPI.THREAD_FUNNELED: "funneled",
        MPI.THREAD_SERIALIZED: "serialized",
        MPI.THREAD_MULTIPLE: "multiple",
    }
    return names.get(MPI.Query_thread(), str(MPI.Query_thread()))
