"""Non-blocking collectives (MPI_I<coll> then MPI_Wait), named as OMB names them (iallreduce, ...).

Each is its blocking twin's spec: the same layout, inputs, exact results, untouched buffers and busbw,
with the twin's own call started and completed instead of made. mpi4py's I-method and the C API's
MPI_I<coll> take the blocking call's arguments and return a request, so the call is derived from the
twin's and nothing about a collective is written twice.

The point's time is OMB's "Pure Comm.": start to completion with nothing in between. After it, the
sweep measures the overlap as OMB does (engine/overlap.py): the call started, a computation of the
pure time, then the wait; Overall, Compute, and overlap % = 100·(1 − (Overall − Compute) / Pure Comm),
at least 0. That percentage is what a DNN trainer's gradient pipeline depends on: how much of the
collective the library completes while the rank computes.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.specs.base import Case, CollectiveSpec, Layout


def _parts(call: Any) -> tuple[Any, tuple]:
    """(bound mpi4py method, arguments) of a blocking spec's call."""
    if isinstance(call, partial):
        return call.func, call.args
    return call, ()


class Started(CollectiveSpec):
    """A blocking collective's spec with its call started and completed (non-blocking, persistent)."""

    def __init__(self, blocking: CollectiveSpec, name: str, osu_title: str) -> None:
        self.blocking = blocking
        self.name = name
        self.osu_title = osu_title
        for attr in ("reduces", "sized", "rooted", "in_place_supported", "has_send", "busbw_formula"):
            setattr(self, attr, getattr(blocking, attr))
        self.pipelinable = blocking.pipelinable
        self.osu_size_is_block = blocking.osu_size_is_block

    default_sweep = False

    @property
    def has_native_call(self) -> bool:
        return self.blocking.has_native_call

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        return self.blocking.layout(nbytes, itemsize, nranks)

    def busbw_factor(self, nranks: int) -> float:
        return self.blocking.busbw_factor(nranks)

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        self.blocking.allocate(case, pool)

    def prepare(self, case: Case) -> None:
        self.blocking.prepare(case)

    def results(self, case: Case):
        return self.blocking.results(case)

    def untouched(self, case: Case) -> list[np.ndarray]:
        return self.blocking.untouched(case)

    def ends(self, rank: int, root: int) -> tuple[bool, bool]:
        return self.blocking.ends(rank, root)

    def mpi4py_call(self, case, MPI, op=None):
        start = self.mpi4py_start(case, MPI, op)
        return lambda: start().Wait()

    def mpi4py_start(self, case: Case, MPI: Any, op: Any = None) -> Any:
        """A callable that starts one call and returns its request."""
        raise NotImplementedError


class NonBlocking(Started):
    nonblocking = True

    def mpi4py_start(self, case, MPI, op=None):
        method, args = _parts(self.blocking.mpi4py_call(case, MPI, op))
        return partial(getattr(case.comm, "I" + method.__name__.lower()), *args)

    def native_start(self, case: Case, nat: Any, MPI: Any) -> tuple[Any, tuple, int]:
        """(MPI_I<coll>, its arguments ending with the request's address, that address): the request
        lives in case.keep with the point."""
        fn, args = self.blocking.native_call(case, nat, MPI)
        req = np.zeros(nat.request_size, np.uint8)
        case.keep = (*case.keep, req)
        return nat.nonblocking(fn), (*args, int(req.ctypes.data)), int(req.ctypes.data)


# OMB's titles (c/mpi/collective/non_blocking/osu_i*.c, 7.4); reduce_scatter here is the block form.
_TITLES = {
    "allreduce": "Non-blocking Allreduce Latency Test",
    "reduce": "Non-blocking Reduce Latency Test",
    "bcast": "Non-Blocking Broadcast Latency Test",
    "allgather": "Non-blocking Allgather Latency Test",
    "reduce_scatter": "Non-blocking Reduce_scatter_block Latency Test",
    "alltoall": "Non-blocking All-to-All Latency Test",
    "gather": "Non-blocking Gather Latency Test",
    "scatter": "Non-blocking Scatter Latency Test",
    "gatherv": "Non-blocking Gatherv Latency Test",
    "scatterv": "Non-blocking Scatterv Latency Test",
    "allgatherv": "Non-blocking Allgatherv Latency Test",
    "alltoallv": "Non-blocking All-to-Allv Personalized Exchange Latency Test",
    "barrier": "Non-blocking Barrier Latency Test",
}


def nonblocking_specs(blocking: dict[str, CollectiveSpec]) -> tuple[NonBlocking, ...]:
    """The non-blocking twin of each blocking collective OMB has one of, in `blocking`'s order."""
    return tuple(NonBlocking(spec, "i" + name, _TITLES[name]) for name, spec in blocking.items() if name in _TITLES)
