"""MPI_Reduce: the root ends with the reduction of all ranks' buffers."""

from __future__ import annotations

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, fill_reduction, reduction_expected


class Reduce(CollectiveSpec):
    name = "reduce"
    reduces = True
    rooted = True
    busbw_formula = "1"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // itemsize
        return Layout(count=count, send_len=count, recv_len=count, nbytes=count * itemsize)

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        # MPI_IN_PLACE is only valid at the root; other ranks always send from a buffer.
        in_place_here = case.in_place and case.rank == case.root
        saved, case.in_place = case.in_place, in_place_here
        super().allocate(case, pool)
        case.in_place = saved

    def prepare(self, case: Case) -> None:
        if case.send is None:
            fill_reduction(case.recv, case)
        else:
            fill_reduction(case.send, case)
            patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        if case.rank != case.root:
            return []
        return [(case.recv, reduction_expected(case, case.count))]


SPEC = Reduce()
