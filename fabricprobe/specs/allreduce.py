"""MPI_Allreduce: every rank ends with the reduction of all ranks' buffers."""

from __future__ import annotations

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, fill_reduction, reduction_expected


class Allreduce(CollectiveSpec):
    name = "allreduce"
    reduces = True
    busbw_formula = "2(n-1)/n"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // itemsize
        return Layout(count=count, send_len=count, recv_len=count, nbytes=count * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return 2.0 * (nranks - 1) / nranks

    def prepare(self, case: Case) -> None:
        if case.in_place:
            fill_reduction(case.recv, case)
        else:
            fill_reduction(case.send, case)
            patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        return [(case.recv, reduction_expected(case, case.count))]


SPEC = Allreduce()
