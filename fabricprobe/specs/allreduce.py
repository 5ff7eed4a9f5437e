"""MPI_Allreduce: every rank ends with the reduction of all ranks' buffers."""

from __future__ import annotations

from functools import partial

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


class Allreduce(CollectiveSpec):
    name = "allreduce"
    reduces = True
    busbw_formula = "2(n-1)/n"
    pipelinable = True
    osu_title = "Allreduce Latency Test"
    nccl_tests_binary = "all_reduce_perf"
    vendor = VendorNames(
        openmpi="allreduce",
        openmpi_id=2,
        openmpi_json="allreduce",
        mpich="ALLREDUCE",
        mpich_size_key="avg_msg_size",
        mpich_posix=True,
        nccl="allreduce",
    )

    def busbw_factor(self, nranks: int) -> float:
        return 2.0 * (nranks - 1) / nranks

    def prepare(self, case: Case) -> None:
        prepare_reduction(case)

    def results(self, case: Case):
        return [(case.recv, reduction_expected(case, case.count))]

    def mpi4py_call(self, case, MPI, op=None):
        send, recv = mpi_buffers(case, MPI)
        return partial(case.comm.Allreduce, send, recv, op_of(case, MPI, op))

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        return nat.allreduce, (send, recv, case.count, dt, nat.handle(op_of(case, MPI)), comm)

    def nccl_call(self, case, nc, dtype, op, stream):
        send, recv = nccl_pointers(case)
        return lambda: nc.allReduce(send, recv, case.count, dtype, op, stream)


SPEC = Allreduce()
