"""MPI_Alltoallv: rank i's block for rank j, of its own length, lands in rank j's receive buffer where
the displacements put it.

The block from i to j has ⌊2c(k+1)/(n+1)⌋ elements with k = (i + j) mod n (specs.uneven), so every
rank sends and receives the same total (the sum over k) in blocks that differ from peer to peer.
Sent packed in rank order; received in reverse rank order with a gap after each block that must keep
its sentinel. The reported size is one rank's data sent; OMB's Size column is the mean block.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs import uneven
from fabricprobe.specs.base import Case, Layout, c_buffers, c_pointer, mpi_vector


def pair_counts(count: int, nranks: int, rank: int, even: bool = False) -> np.ndarray:
    """Elements rank `rank` exchanges with each peer j (sends to j, and receives from j)."""
    if even:
        return uneven.even_counts(count, nranks)
    sizes = uneven.block_counts(count, nranks)
    return sizes[(rank + np.arange(nranks)) % nranks] if nranks else sizes


class Alltoallv(uneven.UnevenBlocks):
    name = "alltoallv"
    osu_title = "All-to-Allv Personalized Exchange Latency Test"

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        counts = self.block_counts(count, nranks)
        return Layout(
            count=count,
            send_len=int(counts.sum()),
            recv_len=self.spread_length(counts),
            nbytes=int(counts.sum()) * itemsize,
        )

    def _counts(self, case: Case) -> np.ndarray:
        return pair_counts(case.count, case.nranks, case.rank, self.even)

    def prepare(self, case: Case) -> None:
        counts = self._counts(case)
        blocks = [patterns.data_at(case.rank, 0, int(k), salt=j) for j, k in enumerate(counts)]
        case.send[:] = np.concatenate(blocks) if blocks else case.send
        patterns.sentinel_fill(case.recv, case.rank)

    def results(self, case: Case):
        counts = self._counts(case)  # from j: j sends rank its block of size pair(j, rank) = pair(rank, j)
        blocks = [patterns.data_at(j, 0, int(k), salt=case.rank) for j, k in enumerate(counts)]
        return self.block_results(case.recv, blocks, counts)

    def untouched(self, case: Case) -> list[np.ndarray]:
        return super().untouched(case) + self.gaps(case.recv, self._counts(case))

    def _vectors(self, case: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        counts = self._counts(case)
        return counts, uneven.packed_displacements(counts), self.displacements(counts)

    def mpi4py_call(self, case, MPI, op=None):
        counts, sdispls, rdispls = self._vectors(case)
        send = mpi_vector(case, MPI, case.send, counts, sdispls)
        recv = mpi_vector(case, MPI, case.recv, counts, rdispls)
        return partial(case.comm.Alltoallv, send, recv)

    def native_call(self, case, nat, MPI):
        send, recv, dt, comm = c_buffers(case, nat, MPI)
        counts, sdispls, rdispls = self._vectors(case)
        case.keep = (counts, sdispls, rdispls)
        c, s, r = c_pointer(counts), c_pointer(sdispls), c_pointer(rdispls)
        return nat.alltoallv, (send, c, s, dt, recv, c, r, dt, comm)


SPEC = Alltoallv()
