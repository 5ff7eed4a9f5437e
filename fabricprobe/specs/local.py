"""Local tests with no communication, timed on every rank at once (as a collective's reduction
steps run): the reduction kernel (reduce_local: dst = dst (op) src) and a plain copy
(copy_local). They give the cost model its γ, and show the kernel against the memory system.

"busbw" for these is memory traffic, counted as each really moves it through the caches: a
reduction reads two arrays and writes one (3 × S); a copy reads one array and writes one, and its
destination's cache lines are read before they are written (write-allocate), so it too moves 3 × S.
Counting the copy as 2 × S made a kernel that takes the copy's time look 1.5× faster than the copy
(the figure docs/performance.md used to quote; timed interleaved, numpy's copy and the Numba
`dst += src` take the same time at 4 MiB and at 64 MiB). The copy is measured right after the kernel
at every size (`interleave_with`), so a slow phase of the machine hits both, and the report gives the
kernel's speedup over the copy from those adjacent points.
"""

from __future__ import annotations

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
        case.recv[:] = patterns.reduction_input_at(0, 2, 0, case.count, case.op)
        case.send[:] = patterns.reduction_input_at(1, 2, 0, case.count, case.op)

    def results(self, case: Case):
        return [(case.recv, patterns.reduction_result_at(2, 0, case.count, case.op))]


class CopyLocal(LocalSpec):
    name = "copy_local"
    busbw_formula = "3 (reads 1 array; the destination is read, write-allocate, then written)"
    implementations = ("numpy",)
    interleave_with = "reduce_local"

    def busbw_factor(self, nranks: int) -> float:
        return 3.0

    def prepare(self, case: Case) -> None:
        case.send[:] = patterns.data_at(case.rank, 0, case.count)
        patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        return [(case.recv, patterns.data_at(case.rank, 0, case.count))]


REDUCE_LOCAL = ReduceLocal()
COPY_LOCAL = CopyLocal()
