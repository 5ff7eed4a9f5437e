"""MPI_Alltoall: block j of rank i's send buffer lands as block i of rank j's receive buffer.

Sized as nccl-tests does: the reported size is one rank's whole buffer (count × n × type).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, VendorNames, c_buffers, mpi_buffers


def _blocks(source: int, nranks: int, count: int, to_rank: int | None = None) -> np.ndarray:
    """Blocks sent by `source` (to every rank), or the single block it sends to `to_rank`."""
    targets = range(nranks) if to_rank is None else (to_rank,)
    return np.concatenate([patterns.data_at(source, 0, count, salt=t) for t in targets])


class Alltoall(CollectiveSpec):
    name = "alltoall"
    busbw_formula = "(n-1)/n"
    osu_title = "All-to-All Personalized Exchange Latency Test"
    nccl_tests_binary = "alltoall_perf"
    osu_size_is_block = True
    vendor = VendorNames(
        openmpi="alltoall", openmpi_id=3, openmpi_json="alltoall", mpich="ALLTOALL", mpich_size_key="total_msg_size"
    )

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        return Layout(count=count, send_len=count * nranks, recv_len=count * nranks, nbytes=count * nranks * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def prepare(self, case: Case) -> None:
        mine = _blocks(case.rank, case.nranks, case.count)
        if case.in_place:
            case.recv[:] = mine
        else:
            case.send[:] = mine
            patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        expected = np.concatenate(
            [_blocks(src, case.nranks, case.count, to_rank=case.rank) for src in range(case.nranks)]
        )
        return [(case.recv, expected)]

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Alltoall, send, recv)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        return nat.alltoall, (send, case.count, dt, recv, case.count, dt, comm)


SPEC = Alltoall()
