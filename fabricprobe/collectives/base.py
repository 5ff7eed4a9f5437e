"""The algorithm registry: every implementation of a collective, the library's own included.

An algorithm is bound to one point's Case and returns a Batch: a callable that runs the
collective once per element of `out`, writing each iteration's time there. The harness only
ever sees Batches, so it times, checks and stores an algorithm without knowing which it holds.

Hand-written algorithms are plain functions with one signature,
    run(comm, sendbuf, recvbuf, op, root) -> None
where sendbuf is None for an in-place call and op is a name from fabricprobe.mpienv.datatypes.OPS.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from fabricprobe.specs.base import Case
from fabricprobe.timing.batch import Batch, TimerUnavailable, python_batch

RunFn = Callable[[Any, Optional[np.ndarray], np.ndarray, str, int], None]

LIBRARY = "library"


@dataclass(frozen=True)
class Algorithm:
    name: str
    collective: str
    summary: str
    run: RunFn | None = None  # hand-written algorithms
    binder: Callable[[Case, str], Batch] | None = None  # algorithms with their own timing paths
    caller: Callable[[Case], Callable[[], object]] | None = None  # one call on a case (binder algorithms)
    native: bool = False  # whether bind() can give the native timer
    buffers: tuple[str, ...] = ("host", "cupy", "numba")  # the buffer kinds it runs on
    semantics: str = "exact"  # sparse allreduce: "exact" (sum of the sparsified inputs) or "gtopk" (approximate)

    def call(self, case: Case) -> Callable[[], object]:
        """One invocation on case's buffers, untimed: what the device-buffer paths wrap in their copies."""
        if self.run is not None:
            return partial(self.run, case.comm, case.send, case.recv, case.op, case.root)
        if self.caller is not None:
            return self.caller(case)
        raise TimerUnavailable(f"{self.collective}/{self.name} has only its own timing loop")

    def bind(self, case: Case, timer: str) -> Batch:
        """A Batch for this case; timer is "native" or "python"."""
        if self.binder is not None:
            return self.binder(case, timer)
        if timer == "native":
            raise TimerUnavailable(f"{self.collective}/{self.name} is written in Python; it has no native timer")
        return python_batch(partial(self.run, case.comm, case.send, case.recv, case.op, case.root), case.comm)


_REGISTRY: dict[tuple[str, str], Algorithm] = {}


def register(algorithm: Algorithm) -> Algorithm:
    key = (algorithm.collective, algorithm.name)
    if key in _REGISTRY:
        raise ValueError(f"algorithm {key} registered twice")
    _REGISTRY[key] = algorithm
    return algorithm


def get(collective: str, name: str) -> Algorithm | None:
    return _REGISTRY.get((collective, name))


def names_for(collective: str, buffer: str = "host") -> list[str]:
    """Algorithm names available for a collective on a buffer kind, the library's first."""
    names = [name for (coll, name), alg in _REGISTRY.items() if coll == collective and buffer in alg.buffers]
    return sorted(names, key=lambda n: (n != LIBRARY, n))


def all_names() -> list[str]:
    return sorted({name for (_, name) in _REGISTRY}, key=lambda n: (n != LIBRARY, n))
