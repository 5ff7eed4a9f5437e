"""MPI_Reduce_scatter_block: rank r ends with block r of the reduction of all ranks' buffers.

Sized as nccl-tests does: the reported size is the whole input buffer (count × n × type).
"""

from __future__ import annotations

from functools import partial

from fabricprobe.memory import device_pointer
from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.specs.base import (
    Case,
    CollectiveSpec,
    Layout,
    VendorNames,
    c_buffers,
    mpi_buffers,
    op_of,
    prepare_reduction,
    reduction_expected,
)


class ReduceScatter(CollectiveSpec):
    name = "reduce_scatter"
    reduces = True
    busbw_formula = "(n-1)/n"
    osu_title = "Reduce_scatter Latency Test"
    nccl_tests_binary = "reduce_scatter_perf"
    vendor = VendorNames(
        openmpi="reduce_scatter_block",
        openmpi_id=13,
        openmpi_json="reducescatterblock",
        mpich="REDUCE_SCATTER_BLOCK",
        mpich_size_key="total_msg_size",
        nccl="reducescatter",
    )

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
        prepare_reduction(case)

    def results(self, case: Case):
        c = case.count
        return [(case.recv[:c], reduction_expected(case, c, first_index=case.rank * c))]

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Reduce_scatter_block, send, recv, op_of(case, MPI, op))

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        return nat.reduce_scatter_block, (send, recv, case.count, dt, nat.handle(op_of(case, MPI)), comm)

    def nccl_call(self, case, nc, dtype, op, stream):
        send, recv = device_pointer(case.send), device_pointer(case.recv)
        return lambda: nc.reduceScatter(send, recv, case.count, dtype, op, stream)

    def nccl_unusable(self, case):
        if case.in_place:
            return (
                "MPI's in-place reduce_scatter_block keeps the result in block 0; NCCL's keeps it in the rank's block"
            )
        return ""


SPEC = ReduceScatter()
