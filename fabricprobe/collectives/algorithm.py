"""What every algorithm is, the library's own included: one shape, so the harness times, checks and stores
an algorithm without knowing which it holds.

    call       one invocation on a point's buffers, untimed (what the Python timer and the device
               transfers wrap); hand-written algorithms give `run`, backends (library, NCCL) `call_on`
    compiled   optional: a Batch timed natively, a compiled loop into the MPI C API (the library's)
    loop       optional: its own Python timing loop, where one call is not the unit (OMB's pt2pt loops)
    unrunnable optional: why it cannot run for this case and transfer ("" when it can)
    cost       optional: its α-β-γ cost Formula; an algorithm without one is reported as not modelled

Hand-written algorithms are plain functions with one signature,
    run(comm, sendbuf, recvbuf, op, root) -> None
where sendbuf is None for an in-place call and op is a name from fabricprobe.mpienv.datatypes.OPS.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from fabricprobe.collectives.cost import Formula
from fabricprobe.specs.base import Case
from fabricprobe.timing.batch import Batch, Call, TimerUnavailable, python_batch

RunFn = Callable[[Any, Optional[np.ndarray], np.ndarray, str, int], None]

LIBRARY = "library"
MPI_TRANSPORT = "mpi"


@dataclass(frozen=True)
class Algorithm:
    name: str
    collective: str
    summary: str
    run: RunFn | None = None  # hand-written algorithms
    call_on: Callable[[Case], Call] | None = None  # backends: one call on a case's buffers
    compiled: Callable[[Case], Batch] | None = None  # native timing
    loop: Callable[[Case], Batch] | None = None  # its own Python timing loop
    unrunnable: Callable[[Case, str], str] | None = None  # (case, transfer) -> reason, "" when it can run
    cost: Formula | None = None
    buffers: tuple[str, ...] = ("host", "cupy", "numba")  # the buffer kinds it runs on
    semantics: str = "exact"  # sparse allreduce: "exact" (sum of the sparsified inputs) or "gtopk" (approximate)
    transport: str = MPI_TRANSPORT  # what carries its messages: MPI, or its own library (NCCL: joins direct points)

    @property
    def native(self) -> bool:
        """Whether the native timer can time it."""
        return self.compiled is not None

    def call(self, case: Case) -> Call:
        """One invocation on case's buffers, untimed: what the device-buffer paths wrap in their copies."""
        if self.run is not None:
            return partial(self.run, case.comm, case.send, case.recv, case.op, case.root)
        if self.call_on is not None:
            return self.call_on(case)
        raise TimerUnavailable(f"{self.collective}/{self.name} has only its own timing loop")

    def bind(self, case: Case, timer: str) -> Batch:
        """A Batch for this case; timer is "native" or "python" (fabricprobe.timing.choice decides which)."""
        if timer == "native":
            if self.compiled is None:
                raise TimerUnavailable(f"{self.collective}/{self.name} is written in Python; it has no native timer")
            return self.compiled(case)
        if self.loop is not None:
            return self.loop(case)
        return python_batch(self.call(case), case.comm)

    def why_not(self, case: Case, transfer: str) -> str:
        """Why this algorithm cannot run this case with this transfer ("" when it can)."""
        return self.unrunnable(case, transfer) if self.unrunnable is not None else ""
