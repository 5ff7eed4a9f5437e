"""MPI_Barrier: no data, one point per run. Its time is also the synchronisation floor."""

from __future__ import annotations

from fabricprobe.specs.base import Case, CollectiveSpec, Layout


class Barrier(CollectiveSpec):
    name = "barrier"
    sized = False
    in_place_supported = False
    has_send = False
    busbw_formula = "0 (no data)"
    osu_title = "Barrier Latency Test"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        return Layout(count=0, send_len=0, recv_len=0, nbytes=0)

    def busbw_factor(self, nranks: int) -> float:
        return 0.0

    def prepare(self, case: Case) -> None:
        return None

    def results(self, case: Case):
        return []

    def mpi4py_call(self, case, MPI, op=None):
        return case.comm.Barrier

    def native_call(self, case, nat, MPI):
        return nat.barrier, (nat.handle(case.comm),)


SPEC = Barrier()
