"""MPI_Reduce: the root ends with the reduction of all ranks' buffers."""

from __future__ import annotations

from functools import partial

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.specs.base import (
    Case,
    CollectiveSpec,
    VendorNames,
    c_buffers,
    mpi_buffers,
    nccl_pointers,
    op_of,
    prepare_reduction,
    reduction_expected,
)


class Reduce(CollectiveSpec):
    name = "reduce"
    rooted = True
    reduces = True
    busbw_formula = "1"
    pipelinable = True
    osu_title = "Reduce Latency Test"
    nccl_tests_binary = "reduce_perf"
    vendor = VendorNames(
        openmpi="reduce",
        openmpi_id=11,
        openmpi_json="reduce",
        mpich="REDUCE",
        mpich_size_key="avg_msg_size",
        mpich_posix=True,
        nccl="reduce",
    )

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        # MPI_IN_PLACE is only valid at the root; other ranks always send from a buffer.
        in_place_here = case.in_place and case.rank == case.root
        saved, case.in_place = case.in_place, in_place_here
        super().allocate(case, pool)
        case.in_place = saved

    def prepare(self, case: Case) -> None:
        prepare_reduction(case)

    def results(self, case: Case):
        if case.rank != case.root:
            return []
        return [(case.recv, reduction_expected(case, case.count))]

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Reduce, send, recv, op_of(case, MPI, op), case.root)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        return nat.reduce, (send, recv, case.count, dt, nat.handle(op_of(case, MPI)), case.root, comm)

    def nccl_call(self, case, nc, dtype, op, stream):
        send, recv = nccl_pointers(case)
        return lambda: nc.reduce(send, recv, case.count, dtype, op, case.root, stream)

    def ends(self, rank, root):
        return True, rank == root


SPEC = Reduce()
