"""MPI_Allgather: every rank ends with all ranks' blocks, in rank order.

Sized as nccl-tests does: the reported size is the whole gathered buffer (count × n × type).
"""

from __future__ import annotations

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout


class Allgather(CollectiveSpec):
    name = "allgather"
    busbw_formula = "(n-1)/n"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        return Layout(count=count, send_len=count, recv_len=count * nranks, nbytes=count * nranks * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def prepare(self, case: Case) -> None:
        mine = patterns.data(case.rank, np.arange(case.count))
        patterns.sentinel_fill(case.recv)
        if case.in_place:
            c = case.count
            case.recv[case.rank * c:(case.rank + 1) * c] = mine
        else:
            case.send[:] = mine

    def results(self, case: Case):
        expected = np.concatenate([patterns.data(r, np.arange(case.count)) for r in range(case.nranks)])
        return [(case.recv, expected)]


SPEC = Allgather()
