"""MPICH's shared-memory collectives spin without yielding below MPI_THREAD_MULTIPLE.

MPICH 5.0.2's posix "release_gather" collectives (barrier, allreduce, bcast, reduce) wait on shared
flags in a loop that never yields, and fabricprobe initializes MPI at thread level single, where MPICH
uses them. Oversubscribed, a waiting rank burns its whole scheduler slice before the rank it waits for
runs. Measured at 4 ranks on 2 cores, an mpi4py loop of 8 B allreduces, and one of barrier + allreduce
(MPIR_CVAR_POLLS_BEFORE_YIELD=1 and MPIR_CVAR_POSIX_POLL_FREQUENCY=1 set throughout):

- thread level single: 8005 µs a call, 16000 µs with the barrier;
- MPIR_CVAR_ALLREDUCE_POSIX_INTRA_ALGORITHM=mpir: 13.6 µs, but the barrier still 5.1-8.4 ms;
- MPIR_CVAR_COLL_SHM_LIMIT_PER_NODE=0 (no shared memory for collectives, so none of them spins):
  24-27 µs, 58-126 µs with the barrier, with or without the yield variables;
- thread level multiple (where MPICH leaves these collectives): 14.3 µs.

The yield variables alone do not reach this loop; the sweep's timed calls of 4 ranks on 2 cores read
8.0 ms at every size up to 4 KiB before this was found.
"""

from __future__ import annotations

from typing import Any

VARIABLE = "MPIR_CVAR_COLL_SHM_LIMIT_PER_NODE"


def spin_warning(attrs: dict[str, Any]) -> str:
    """The warning for a run whose MPICH shared-memory collectives spin while oversubscribed, or ""."""
    if not attrs.get("oversubscribed") or attrs.get("mpi_vendor") != "MPICH":
        return ""
    if attrs.get("thread_level_provided") == "multiple":
        return ""
    if str((attrs.get("environment") or {}).get(VARIABLE, "")).strip() == "0":
        return ""
    return (
        "MPICH's shared-memory collectives spin without yielding below MPI_THREAD_MULTIPLE: oversubscribed, "
        "each call costs whole scheduler slices (8.0 ms for an 8 B allreduce at 4 ranks on 2 cores, 24-27 µs "
        f"with the setting); set {VARIABLE}=0 for such runs"
    )
