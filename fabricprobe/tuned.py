"""The public face of runtime selection: `from fabricprobe import tuned`, then `tuned.load(path)` and
`tuned.allreduce(...)` runs whatever the loaded selection file chose for the communicator, its nodes
and the size; `tuned.last_choice()` says which (implementation: fabricprobe.tuning.runtime)."""

from fabricprobe.tuning.runtime import (
    algorithm_for,
    allgather,
    allreduce,
    alltoall,
    bcast,
    last_choice,
    load,
    loaded,
    loaded_from,
    reduce,
    reduce_scatter,
    run,
    sparse_allreduce,
)

__all__ = [
    "algorithm_for",
    "allgather",
    "allreduce",
    "alltoall",
    "bcast",
    "last_choice",
    "load",
    "loaded",
    "loaded_from",
    "reduce",
    "reduce_scatter",
    "run",
    "sparse_allreduce",
]
