"""The uneven blocks of the vector collectives (gatherv, scatterv, allgatherv, alltoallv).

OMB's v-tests give every rank the same count, so they time the vector call but never test what makes
it a vector call. Here rank r's block is ⌊2·c·(r+1)/(n+1)⌋ elements for a mean block of c: from about
2c/(n+1) on rank 0 to about 2c on the last rank, some ranks with none at small c, the total within n
elements of c·n. Blocks land in the receive buffer in reverse rank order, one unwritten element after
each, so a library that ignored the displacements, or wrote past a block, leaves a wrong element that
validation counts (the gaps must keep their sentinel).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fabricprobe.oracle import patterns
from fabricprobe.specs.base import Case, CollectiveSpec, Layout


def block_counts(count: int, nranks: int) -> np.ndarray:
    """Elements in each rank's block, for a mean block of `count` elements (int32: MPI's int counts)."""
    ranks = np.arange(1, nranks + 1, dtype=np.int64)
    return ((2 * count * ranks) // (nranks + 1)).astype(np.int32)


def total(count: int, nranks: int) -> int:
    return int(block_counts(count, nranks).sum())


def gapped_displacements(counts: np.ndarray) -> np.ndarray:
    """Where each rank's block starts in a receive buffer holding them in reverse rank order, one
    element of gap after each block (int32)."""
    sizes = counts.astype(np.int64) + 1
    after = np.cumsum(sizes[::-1])[::-1] - sizes  # elements of the blocks of higher ranks, before this one
    return after.astype(np.int32)


def gapped_length(counts: np.ndarray) -> int:
    """A receive buffer's length for gapped_displacements: every block and one gap each."""
    return int(counts.sum()) + len(counts)


def packed_displacements(counts: np.ndarray) -> np.ndarray:
    """Blocks one after another in rank order (a send buffer's layout)."""
    return (np.cumsum(counts, dtype=np.int64) - counts).astype(np.int32)


def block_results(recv: np.ndarray, blocks: list[np.ndarray], counts: np.ndarray) -> list[tuple[np.ndarray, ...]]:
    """(actual, expected) for each rank's block at its gapped displacement in recv."""
    starts = gapped_displacements(counts)
    return [(recv[s : s + int(k)], block) for s, k, block in zip(starts, counts, blocks)]


def gaps(recv: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    """The one-element gaps after each block, as views of recv: the call must leave them as they are."""
    return [recv[s + int(k) : s + int(k) + 1] for s, k in zip(gapped_displacements(counts), counts)]


class UnevenBlocks(CollectiveSpec):
    """What the vector collectives share: their layout (one buffer holds every block, gapped; the
    other one rank's own block), busbw, OMB's size column, and being left out of the default sweep."""

    in_place_supported = False
    busbw_formula = "(n-1)/n"
    osu_size_is_block = True
    default_sweep = False
    gapped: ClassVar[str] = "recv"  # the buffer that holds every block with its gap: recv or send

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        counts = block_counts(count, nranks)
        own, every = int(counts.max(initial=0)), gapped_length(counts)
        send, recv = (own, every) if self.gapped == "recv" else (every, own)
        return Layout(count=count, send_len=send, recv_len=recv, nbytes=int(counts.sum()) * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def _counts(self, case: Case) -> np.ndarray:
        return block_counts(case.count, case.nranks)

    def _prepare_own_block(self, case: Case) -> None:
        """This rank's block at the head of its send buffer, sentinels after it and in recv."""
        mine = int(self._counts(case)[case.rank])
        case.send[:mine] = patterns.data_at(case.rank, 0, mine)
        patterns.sentinel_fill(case.send[mine:], case.rank, patterns.SEND)
        patterns.sentinel_fill(case.recv, case.rank)
