"""Local tests with no communication, timed on every rank at once (as a collective's reduction
steps run): the reduction kernel (reduce_local: dst = dst (op) src) and a plain copy
(copy_local). They give the cost model its γ, and show the kernel against the memory system.

"busbw" for these is memory traffic: a reduction reads two arrays and writes one (3 × S), a
copy reads one and writes one (2 × S), so busbw(reduce_local) / busbw(copy_local) compares the
kernel's bandwidth with a copy's.
"""

from __future__ import annotations

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec


class LocalSpec(CollectiveSpec):
    local = True
    in_library = False
    in_place_supported = False


class ReduceLocal(LocalSpec):
    name = "reduce_local"
    reduces = True
    busbw_formula = "3 (reads 2 arrays, writes 1)"
    implementations = ("numba",)

    def busbw_factor(self, nranks: int) -> float:
        return 3.0

    def prepare(self, case: Case) -> None:
        index = np.arange(case.count)
        case.recv[:] = patterns.reduction_input(0, 2, index, case.op)
        case.send[:] = patterns.reduction_input(1, 2, index, case.op)

    def results(self, case: Case):
        return [(case.recv, patterns.reduction_result(2, np.arange(case.count), case.op))]


class CopyLocal(LocalSpec):
    name = "copy_local"
    busbw_formula = "2 (reads 1 array, writes 1)"
    implementations = ("numpy",)

    def busbw_factor(self, nranks: int) -> float:
        return 2.0

    def prepare(self, case: Case) -> None:
        case.send[:] = patterns.data(case.rank, np.arange(case.count))
        patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        return [(case.recv, patterns.data(case.rank, np.arange(case.count)))]


REDUCE_LOCAL = ReduceLocal()
COPY_LOCAL = CopyLocal()
