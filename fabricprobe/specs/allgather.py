"""MPI_Allgather: every rank ends with all ranks' blocks, in rank order.

Sized as nccl-tests does: the reported size is the whole gathered buffer (count × n × type).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.memory import device_pointer
from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, VendorNames, c_buffers, mpi_buffers


class Allgather(CollectiveSpec):
    name = "allgather"
    busbw_formula = "(n-1)/n"
    osu_title = "Allgather Latency Test"
    nccl_tests_binary = "all_gather_perf"
    osu_size_is_block = True
    vendor = VendorNames(
        openmpi="allgather",
        openmpi_id=0,
        openmpi_json="allgather",
        mpich="ALLGATHER",
        mpich_size_key="total_msg_size",
        nccl="allgather",
    )

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        return Layout(count=count, send_len=count, recv_len=count * nranks, nbytes=count * nranks * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def prepare(self, case: Case) -> None:
        mine = patterns.data_at(case.rank, 0, case.count)
        patterns.sentinel_fill(case.recv, case.rank)
        if case.in_place:
            c = case.count
            case.recv[case.rank * c : (case.rank + 1) * c] = mine
        else:
            case.send[:] = mine

    def results(self, case: Case):
        expected = np.concatenate([patterns.data_at(r, 0, case.count) for r in range(case.nranks)])
        return [(case.recv, expected)]

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Allgather, send, recv)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        return nat.allgather, (send, case.count, dt, recv, case.count, dt, comm)

    def nccl_call(self, case, nc, dtype, op, stream):
        recv, n = device_pointer(case.recv), case.count
        # In place, NCCL finds this rank's block inside the receive buffer, where MPI keeps it too.
        mine = recv + case.rank * n * case.dtype.itemsize if case.send is None else device_pointer(case.send)
        return lambda: nc.allGather(mine, recv, n, dtype, stream)


SPEC = Allgather()
