"""What every collective spec provides, and the per-point state the harness hands around.

A spec (one file per collective, like nccl-tests' testColl) knows the collective's semantics:
buffer lengths for a message size, the busbw factor, the input pattern and the exact result.
It never times or calls MPI itself; algorithms (fabricprobe.collectives) do the calling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import patterns


@dataclass(frozen=True)
class Layout:
    count: int  # the count argument of the MPI call (per rank, or per peer for alltoall)
    send_len: int  # elements in the send buffer (0 when the call has none)
    recv_len: int  # elements in the receive buffer
    nbytes: int  # S in the busbw formula: the size the point is reported under


@dataclass
class Case:
    """One measured point's buffers and parameters, as seen by one rank."""

    collective: str
    comm: Any
    rank: int
    nranks: int
    dtype_name: str
    dtype: np.dtype
    op: str
    root: int
    in_place: bool
    layout: Layout
    send: np.ndarray | None = None  # None for in-place calls and calls without a send buffer (bcast)
    recv: np.ndarray = field(default_factory=lambda: np.empty(0))
    peer: int = -1  # point-to-point partner, -1 when this rank sits the point out
    role: int = -1  # point-to-point role (spec-defined), -1 when idle
    window: int = 64  # messages per window in the bandwidth tests
    hugepages: bool = False  # 2 MiB-aligned, madvised transparent huge pages for large buffers
    density: float = 0.0  # sparse tests: the fraction of elements each rank contributes
    semantics: str = "exact"  # sparse allreduce: which reference result applies

    @property
    def count(self) -> int:
        return self.layout.count


def tolerance(dtype: np.dtype) -> float:
    """Relative tolerance for a result. Patterns are exact, so this only absorbs what an
    implementation may legitimately do differently (it is not OMB's "any error < 1.0")."""
    if dtype.kind == "f":
        return 4 * float(np.finfo(dtype).eps)
    return 0.0


def count_wrong(actual: np.ndarray, expected: np.ndarray) -> int:
    """Elements of `actual` that differ from `expected` beyond the dtype's tolerance; NaN counts."""
    if actual.size == 0:
        return 0
    exp = expected.astype(actual.dtype, copy=False) if actual.dtype.kind != "f" else expected
    rtol = tolerance(actual.dtype)
    if rtol == 0.0:
        return int(np.count_nonzero(actual != exp))
    ok = np.isclose(actual, exp, rtol=rtol, atol=0.0, equal_nan=False)
    return int(actual.size - np.count_nonzero(ok))


class CollectiveSpec:
    """Base for collective specs. Subclasses set the class attributes and implement the hooks."""

    name: ClassVar[str]
    reduces: ClassVar[bool] = False  # takes a reduction op
    rooted: ClassVar[bool] = False
    sized: ClassVar[bool] = True  # False for barrier: one point, no message size
    pt2pt: ClassVar[bool] = False
    local: ClassVar[bool] = False  # no communication (the kernel tests)
    sparse: ClassVar[bool] = False  # measured per density (--density)
    implementations: ClassVar[tuple[str, ...]] = ()  # local tests: the algorithms that implement them
    in_place_supported: ClassVar[bool] = True
    has_send: ClassVar[bool] = True  # False when the call has only one buffer (bcast) or none
    busbw_formula: ClassVar[str] = "1"  # human-readable F in busbw = algbw * F

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        raise NotImplementedError

    def busbw_factor(self, nranks: int) -> float:
        return 1.0

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        """Page-aligned buffers for the case's layout, from the process's pool."""
        lay = case.layout
        case.send = (None if case.in_place or not self.has_send
                     else pool.get("send", lay.send_len, case.dtype, case.hugepages))
        case.recv = pool.get("recv", lay.recv_len, case.dtype, case.hugepages)

    def prepare(self, case: Case) -> None:
        """Write this rank's input and mark the output as unwritten."""
        raise NotImplementedError

    def results(self, case: Case) -> list[tuple[np.ndarray, np.ndarray]]:
        """(actual, expected) pairs this rank can check after one call."""
        raise NotImplementedError

    def check(self, case: Case) -> int:
        return sum(count_wrong(actual, expected) for actual, expected in self.results(case))

    def checked_elements(self, case: Case) -> int:
        return sum(actual.size for actual, _ in self.results(case))


def fill_reduction(buf: np.ndarray, case: Case, first_index: int = 0) -> None:
    index = np.arange(first_index, first_index + buf.size, dtype=np.int64)
    buf[:] = patterns.reduction_input(case.rank, case.nranks, index, case.op)


def reduction_expected(case: Case, length: int, first_index: int = 0) -> np.ndarray:
    index = np.arange(first_index, first_index + length, dtype=np.int64)
    return patterns.reduction_result(case.nranks, index, case.op)
