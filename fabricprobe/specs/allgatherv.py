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
from fabricprobe.specs.base import Case, c_buffers, c_pointer, mpi_block, mpi_vector


class Allgatherv(uneven.UnevenBlocks):
    name = "allgatherv"
    osu_title = "Allgatherv Latency Test"

    def prepare(self, case: Case) -> None:
        self._prepare_own_block(case)

    def results(self, case: Case):
        counts = self._counts(case)
        return self.block_results(case.recv, [patterns.data_at(r, 0, int(k)) for r, k in enumerate(counts)], counts)

    def untouched(self, case: Case) -> list[np.ndarray]:
        return super().untouched(case) + self.gaps(case.recv, self._counts(case))

    def mpi4py_call(self, case, MPI, op=None):
        counts = self._counts(case)
        send = mpi_block(case, MPI, case.send, int(counts[case.rank]))
        recv = mpi_vector(case, MPI, case.recv, counts, self.displacements(counts))
        return partial(case.comm.Allgatherv, send, recv)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        counts = self._counts(case)
        displs = self.displacements(counts)
        case.keep = (counts, displs)
        mine = int(counts[case.rank])
        return nat.allgatherv, (send, mine, dt, recv, c_pointer(counts), c_pointer(displs), dt, comm)


SPEC = Allgatherv()
