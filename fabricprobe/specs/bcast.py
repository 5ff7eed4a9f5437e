"""MPI_Bcast: every rank ends with the root's buffer."""

from __future__ import annotations

from functools import partial

from fabricprobe.memory import device_pointer
from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, VendorNames, c_buffers, mpi_buffers


class Bcast(CollectiveSpec):
    name = "bcast"
    rooted = True
    in_place_supported = False
    has_send = False  # a broadcast has one buffer
    busbw_formula = "1"
    pipelinable = True
    osu_title = "Broadcast Latency Test"
    nccl_tests_binary = "broadcast_perf"
    vendor = VendorNames(
        openmpi="bcast",
        openmpi_id=7,
        openmpi_json="bcast",
        mpich="BCAST",
        mpich_size_key="avg_msg_size",
        mpich_posix=True,
        nccl="broadcast",
    )

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // itemsize
        return Layout(count=count, send_len=0, recv_len=count, nbytes=count * itemsize)

    def prepare(self, case: Case) -> None:
        if case.rank == case.root:
            case.recv[:] = patterns.data_at(case.root, 0, case.count)
        else:
            patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        return [(case.recv, patterns.data_at(case.root, 0, case.count))]

    def mpi4py_call(self, case, MPI, op=None):
        _, buf = mpi_buffers(case, MPI)
        return partial(case.comm.Bcast, buf, case.root)

    def native_call(self, case, nat, MPI):
        _, buf, dt, comm = c_buffers(case, nat, MPI)
        return nat.bcast, (buf, case.count, dt, case.root, comm)

    def nccl_call(self, case, nc, dtype, op, stream):
        buf = device_pointer(case.recv)
        return lambda: nc.bcast(buf, case.count, dtype, case.root, stream)

    def ends(self, rank, root):
        return rank == root, rank != root


SPEC = Bcast()
