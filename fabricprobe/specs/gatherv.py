"""MPI_Gatherv: the root ends with every rank's block, each of its own length, where the
displacements put it.

The blocks are uneven (specs.uneven: rank r sends ⌊2c(r+1)/(n+1)⌋ elements) and land in reverse rank
order with a one-element gap after each, which must keep its sentinel. The reported size is the data
gathered (the sum of the blocks, × type); OMB's Size column is the mean block (OMB's own gatherv sends
the same count from every rank).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs import uneven
from fabricprobe.specs.base import Case, c_buffers, c_pointer, mpi_block, mpi_vector


class Gatherv(uneven.UnevenBlocks):
    name = "gatherv"
    rooted = True
    osu_title = "Gatherv Latency Test"

    def prepare(self, case: Case) -> None:
        self._prepare_own_block(case)

    def results(self, case: Case):
        if case.rank != case.root:
            return []
        counts = self._counts(case)
        return self.block_results(case.recv, [patterns.data_at(r, 0, int(k)) for r, k in enumerate(counts)], counts)

    def untouched(self, case: Case) -> list[np.ndarray]:
        if case.rank != case.root:
            return super().untouched(case) + [case.recv]
        return super().untouched(case) + self.gaps(case.recv, self._counts(case))

    def mpi4py_call(self, case, MPI, op=None):
        counts = self._counts(case)
        send = mpi_block(case, MPI, case.send, int(counts[case.rank]))
        recv = mpi_vector(case, MPI, case.recv, counts, self.displacements(counts))
        return partial(case.comm.Gatherv, send, recv, case.root)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        counts = self._counts(case)
        displs = self.displacements(counts)
        case.keep = (counts, displs)
        mine = int(counts[case.rank])
        return nat.gatherv, (send, mine, dt, recv, c_pointer(counts), c_pointer(displs), dt, case.root, comm)

    def ends(self, rank, root):
        return True, rank == root


SPEC = Gatherv()
