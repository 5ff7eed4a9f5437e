"""The gradient allreduce a trainer uses, chosen by name: "tuned" (whatever the loaded fabricprobe
selection table picks per size, the library where it has none), "library", or any hand-written
allreduce in fabricprobe.collectives; optionally split into fusion buckets."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fabricprobe import collectives, tuned
from fabricprobe.errors import UsageError


def allreduce_fn(name: str) -> Callable[[Any, np.ndarray, np.ndarray], None]:
    if name == "tuned":
        tuned.load()  # $FABRICPROBE_SELECTION, or the library everywhere
        return lambda comm, send, recv: tuned.allreduce(send, recv, "sum", comm)
    if name == collectives.LIBRARY:
        from mpi4py import MPI

        return lambda comm, send, recv: comm.Allreduce(send, recv, op=MPI.SUM)
    alg = collectives.get("allreduce", name)
    if alg is None or alg.run is None:
        names = [n for n in collectives.names_for("allreduce") if n != collectives.LIBRARY]
        raise UsageError(f"unknown --allreduce {name!r}: choose tuned, library or one of {', '.join(names)}")
    return lambda comm, send, recv: alg.run(comm, send, recv, "sum", 0)


def bucketed(fn: Callable, comm: Any, send: np.ndarray, recv: np.ndarray, bucket_bytes: int) -> int:
    """Allreduce send into recv in buckets of about bucket_bytes (0: one call); returns the call count."""
    if bucket_bytes <= 0 or send.nbytes <= bucket_bytes:
        fn(comm, send, recv)
        return 1
    step = max(1, bucket_bytes // send.itemsize)
    calls = 0
    for lo in range(0, send.size, step):
        fn(comm, send[lo : lo + step], recv[lo : lo + step])
        calls += 1
    return calls


def dense_bytes_sent(nbytes: int, p: int) -> int:
    """What one rank sends in a bandwidth-optimal allreduce of nbytes, 2(p−1)/p·S (nccl-tests' bus
    bytes): the dense reference the sparse trainer's counted bytes are compared with."""
    return int(2 * (p - 1) * nbytes / p) if p > 1 else 0
