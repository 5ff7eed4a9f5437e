"""The gradient allreduce a trainer uses, chosen by name: "tuned" (whatever the loaded fabricprobe
selection file picks for the communicator and each bucket's size, the library where it has none),
"library", or any hand-written allreduce in fabricprobe.collectives; optionally split into fusion
buckets. Every call says which algorithm ran, so a training record names it per bucket."""

from __future__ import annotations

import time
from typing import Any, Callable

from fabricprobe import collectives, tuned
from fabricprobe.console import warn_line
from fabricprobe.errors import UsageError

AllreduceFn = Callable[[Any, Any, Any], str]  # (comm, send, recv) -> the name of the algorithm that ran


def allreduce_fn(name: str, selection: str = "") -> AllreduceFn:
    """The gradient allreduce called `name`; "tuned" loads the selection file (`selection`, else
    $FABRICPROBE_SELECTION), refused when made for another library or job shape."""
    if name == "tuned":
        if tuned.load(selection or None) is None:
            warn_line("--allreduce tuned without a selection file (--selection, FABRICPROBE_SELECTION): the library")
        return lambda comm, send, recv: tuned.run("allreduce", send, recv, "sum", 0, comm)
    if name == collectives.LIBRARY:
        from mpi4py import MPI

        def library(comm, send, recv) -> str:
            comm.Allreduce(send, recv, op=MPI.SUM)
            return collectives.LIBRARY

        return library
    alg = collectives.get("allreduce", name)
    if alg is None or alg.run is None:
        names = [n for n in collectives.names_for("allreduce") if n != collectives.LIBRARY]
        raise UsageError(f"unknown --allreduce {name!r}: choose tuned, library or one of {', '.join(names)}")

    def own(comm, send, recv) -> str:
        alg.run(comm, send, recv, "sum", 0)
        return name

    return own


def bucketed(fn: AllreduceFn, comm: Any, send: Any, recv: Any, bucket_bytes: int, clock: Any) -> int:
    """Allreduce send into recv in buckets of about bucket_bytes (0: one call), each bucket's size,
    algorithm and seconds noted on the clock; returns the call count."""
    step = send.size if bucket_bytes <= 0 else max(1, bucket_bytes // send.itemsize)
    calls = 0
    for lo in range(0, max(send.size, 1), step):
        part = send[lo : lo + step]
        t0 = time.perf_counter()
        name = fn(comm, part, recv[lo : lo + step])
        clock.bucket(part.nbytes, name, time.perf_counter() - t0)
        calls += 1
    return calls


def dense_bytes_sent(nbytes: int, p: int) -> int:
    """What one rank sends in a bandwidth-optimal allreduce of nbytes, 2(p−1)/p·S (nccl-tests' bus
    bytes): the dense reference the sparse trainer's counted bytes are compared with."""
    return int(2 * (p - 1) * nbytes / p) if p > 1 else 0
