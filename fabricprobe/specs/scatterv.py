"""MPI_Scatterv: block r of the root's buffer, of its own length and where the displacements say,
lands in rank r's receive buffer.

The blocks are uneven (specs.uneven), laid out in the root's buffer in reverse rank order with a
one-element gap after each (never sent). Each receive buffer is as long as the largest block; what a
rank's block leaves unwritten must keep its sentinel. The reported size is the data scattered; OMB's
Size column is the mean block.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import patterns
from fabricprobe.specs import uneven
from fabricprobe.specs.base import Case, allocate_send_at_root, c_buffers, c_pointer, mpi_block, mpi_vector


class Scatterv(uneven.UnevenBlocks):
    name = "scatterv"
    gapped = "send"
    rooted = True
    osu_title = "Scatterv Latency Test"

    def _blocks(self, case: Case) -> list[np.ndarray]:
        return [patterns.data_at(case.root, 0, int(k), salt=r) for r, k in enumerate(self._counts(case))]

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        allocate_send_at_root(case, pool)

    def prepare(self, case: Case) -> None:
        if case.rank == case.root:
            patterns.sentinel_fill(case.send, case.rank, patterns.SEND)
            for block, expected in self.block_results(case.send, self._blocks(case), self._counts(case)):
                block[:] = expected
        patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        mine = int(self._counts(case)[case.rank])
        return [(case.recv[:mine], patterns.data_at(case.root, 0, mine, salt=case.rank))]

    def untouched(self, case: Case) -> list[np.ndarray]:
        mine = int(self._counts(case)[case.rank])
        return super().untouched(case) + [case.recv[mine:]]

    def mpi4py_call(self, case, MPI, op=None):
        counts = self._counts(case)
        send = mpi_vector(case, MPI, case.send, counts, self.displacements(counts))
        recv = mpi_block(case, MPI, case.recv, int(counts[case.rank]))
        return partial(case.comm.Scatterv, send, recv, case.root)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        counts = self._counts(case)
        displs = self.displacements(counts)
        case.keep = (counts, displs)
        mine = int(counts[case.rank])
        return nat.scatterv, (send, c_pointer(counts), c_pointer(displs), dt, recv, mine, dt, case.root, comm)

    def ends(self, rank, root):
        return rank == root, True


SPEC = Scatterv()
