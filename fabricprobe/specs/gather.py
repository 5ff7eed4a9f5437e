"""MPI_Gather: the root ends with every rank's block, in rank order.

Sized as allgather (and nccl-tests' gather): the reported size is the whole gathered buffer
(count × n × type); OMB's Size column is one rank's block. The receive buffer means nothing at the
other ranks, so there it must keep its sentinel (untouched).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, c_buffers, mpi_buffers


class Gather(CollectiveSpec):
    name = "gather"
    rooted = True
    in_place_supported = False
    busbw_formula = "(n-1)/n"
    osu_title = "Gather Latency Test"
    osu_size_is_block = True
    default_sweep = False

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        return Layout(count=count, send_len=count, recv_len=count * nranks, nbytes=count * nranks * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def prepare(self, case: Case) -> None:
        case.send[:] = patterns.data_at(case.rank, 0, case.count)
        patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        if case.rank != case.root:
            return []
        expected = np.concatenate([patterns.data_at(r, 0, case.count) for r in range(case.nranks)])
        return [(case.recv, expected)]

    def untouched(self, case: Case) -> list[np.ndarray]:
        return super().untouched(case) + ([] if case.rank == case.root else [case.recv])

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Gather, send, recv, case.root)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        return nat.gather, (send, case.count, dt, recv, case.count, dt, case.root, comm)

    def ends(self, rank, root):
        return True, rank == root


SPEC = Gather()
