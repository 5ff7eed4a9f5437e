"""MPI_Reduce_scatter_block: rank r ends with block r of the reduction of all ranks' buffers.

Sized as nccl-tests does: the reported size is the whole input buffer (count × n × type).
"""

from __future__ import annotations

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, fill_reduction, reduction_expected


class ReduceScatter(CollectiveSpec):
    name = "reduce_scatter"
    reduces = True
    busbw_formula = "(n-1)/n"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        return Layout(count=count, send_len=count * nranks, recv_len=count, nbytes=count * nranks * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        super().allocate(case, pool)
        if case.in_place:  # the input is read from the receive buffer, so it holds all blocks
            case.recv = pool.get("recv", case.count * case.nranks, case.dtype, case.hugepages)

    def prepare(self, case: Case) -> None:
        if case.in_place:
            fill_reduction(case.recv, case)
        else:
            fill_reduction(case.send, case)
            patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        c = case.count
        return [(case.recv[:c], reduction_expected(case, c, first_index=case.rank * c))]


SPEC = ReduceScatter()
