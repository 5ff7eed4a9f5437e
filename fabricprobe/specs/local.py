"""Local tests with no communication, timed on every rank at once (as a collective's reduction
steps run): the reduction kernel (reduce_local: dst = dst (op) src) and a plain copy
(copy_local). They give the cost model its γ, and show the kernel against the memory system.

"busbw" for these is memory traffic, counted as each really moves it through the caches: a
reduction reads two arrays and writes one (3 × S); a copy reads one array and writes one, and on the
host its destination's cache lines are read before they are written (write-allocate), so it too
moves 3 × S. On a GPU a copy moves 2 × S: the L2 takes whole written sectors without reading them
from memory. Counted as 3 × S, the device-to-device copy of 256 MiB measured on the lent H100
(docs/gpu.md) read 4.14 TB/s, above the 3.35 TB/s that HBM3 can move; counted as 2 × S it reads
2.76 TB/s, near the 3.0 TB/s (bytes read and written) a PyTorch device-to-device copy moved on
that kind of machine (the device tool's notes).
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
    device_busbw_formula = "2 (reads 1 array, writes 1: a GPU's L2 takes whole written sectors unread)"
    implementations = ("numpy",)
    interleave_with = "reduce_local"

    def busbw_factor(self, nranks: int) -> float:
        return 3.0

    def busbw_factor_on(self, nranks: int, device: bool) -> float:
        return 2.0 if device else self.busbw_factor(nranks)

    def busbw_formula_for(self, device: bool) -> str:
        return self.device_busbw_formula if device else self.busbw_formula

    def prepare(self, case: Case) -> None:
        case.send[:] = patterns.data_at(case.rank, 0, case.count)
        patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        return [(case.recv, patterns.data_at(case.rank, 0, case.count))]


REDUCE_LOCAL = ReduceLocal()
COPY_LOCAL = CopyLocal()
