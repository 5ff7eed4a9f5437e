"""The public face of runtime selection: `from fabricprobe import tuned`, then `tuned.allreduce(...)`
runs whatever the loaded selection table chose (implementation: fabricprobe.tuning.runtime)."""

from fabricprobe.tuning.runtime import algorithm_for, allgather, allreduce, bcast, load, loaded_from

__all__ = ["algorithm_for", "allgather", "allreduce", "bcast", "load", "loaded_from"]
