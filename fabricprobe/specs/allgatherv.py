"""MPI_Allgatherv: every rank ends with every rank's block, each of its own length, where the
displacements put it.

Blocks and layout as gatherv (specs.uneven: uneven blocks, reverse rank order, a gap after each that
must keep its sentinel), on every rank. The reported size is the data gathered; OMB's Size column is
the mean block.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs import uneven
from fabricprobe.specs.base import Case, CollectiveSpec, Layout, c_buffers, c_pointer, mpi_block, mpi_vector


class Allgatherv(CollectiveSpec):
    name = "allgatherv"
    in_place_supported = False
    busbw_formula = "(n-1)/n"
    osu_title = "Allgatherv Latency Test"
    osu_size_is_block = True
    default_sweep = False

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        counts = uneven.block_counts(count, nranks)
        return Layout(
            count=count,
            send_len=int(counts.max(initial=0)),
            recv_len=uneven.gapped_length(counts),
            nbytes=int(counts.sum()) * itemsize,
        )

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def _counts(self, case: Case) -> np.ndarray:
        return uneven.block_counts(case.count, case.nranks)

    def prepare(self, case: Case) -> None:
        mine = int(self._counts(case)[case.rank])
        case.send[:mine] = patterns.data_at(case.rank, 0, mine)
        patterns.sentinel_fill(case.send[mine:])
        patterns.sentinel_fill(case.recv)

    def results(self, case: Case):
        counts = self._counts(case)
        return uneven.block_results(case.recv, [patterns.data_at(r, 0, int(k)) for r, k in enumerate(counts)], counts)

    def untouched(self, case: Case) -> list[np.ndarray]:
        return super().untouched(case) + uneven.gaps(case.recv, self._counts(case))

    def mpi4py_call(self, case, MPI, op=None):
        counts = self._counts(case)
        send = mpi_block(case, MPI, case.send, int(counts[case.rank]))
        recv = mpi_vector(case, MPI, case.recv, counts, uneven.gapped_displacements(counts))
        return partial(case.comm.Allgatherv, send, recv)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        counts = self._counts(case)
        displs = uneven.gapped_displacements(counts)
        case.keep = (counts, displs)
        mine = int(counts[case.rank])
        return nat.allgatherv, (send, mine, dt, recv, c_pointer(counts), c_pointer(displs), dt, comm)


SPEC = Allgatherv()
