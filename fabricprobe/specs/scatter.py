"""MPI_Scatter: block r of the root's buffer lands in rank r's receive buffer.

Sized as gather: the reported size is the root's whole buffer (count × n × type); OMB's Size column is
one rank's block. The send buffer means nothing at the other ranks and is not allocated there.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, allocate_send_at_root, c_buffers, mpi_buffers


class Scatter(CollectiveSpec):
    name = "scatter"
    rooted = True
    in_place_supported = False
    busbw_formula = "(n-1)/n"
    osu_title = "Scatter Latency Test"
    osu_size_is_block = True
    default_sweep = False

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        return Layout(count=count, send_len=count * nranks, recv_len=count, nbytes=count * nranks * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        allocate_send_at_root(case, pool)

    def prepare(self, case: Case) -> None:
        if case.rank == case.root:
            c = case.count
            case.send[:] = np.concatenate([patterns.data_at(case.root, 0, c, salt=r) for r in range(case.nranks)])
        patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        return [(case.recv, patterns.data_at(case.root, 0, case.count, salt=case.rank))]

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Scatter, send, recv, case.root)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        return nat.scatter, (send, case.count, dt, recv, case.count, dt, case.root, comm)

    def ends(self, rank, root):
        return rank == root, True


SPEC = Scatter()
