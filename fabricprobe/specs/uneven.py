"""The uneven blocks of the vector collectives (gatherv, scatterv, allgatherv, alltoallv).

OMB's v-tests give every rank the same count, so they time the vector call but never test what makes
it a vector call. Here rank r's block is ⌊2·c·(r+1)/(n+1)⌋ elements for a mean block of c: from about
2c/(n+1) on rank 0 to about 2c on the last rank, some ranks with none at small c, the total within n
elements of c·n. Blocks land in the receive buffer in reverse rank order, one unwritten element after
each, so a library that ignored the displacements, or wrote past a block, leaves a wrong element that
validation counts (the gaps must keep their sentinel). The one-element gap also moves later blocks off
their alignment, which costs large blocks time in the libraries' copies (measured feature by feature
in docs/studies/2026-11-29-vector-layouts): a real cost of such a layout, and most of what the uneven
form costs over OMB's.

Each vector collective also has an even form (`gatherv_even`, ...; `even_form`): OMB's layout, every
block c elements, packed in rank order, no gaps. It exists to be read beside OMB's binaries and beside
the uneven form at the same size, which shows what the uneven layout adds (docs/performance.md); it
validates every block, but a write past a block has no gap to land in.
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


def even_counts(count: int, nranks: int) -> np.ndarray:
    """OMB's blocks: `count` elements from every rank (int32)."""
    return np.full(nranks, count, dtype=np.int32)


class UnevenBlocks(CollectiveSpec):
    """What the vector collectives share: their layout (one buffer holds every block, gapped; the
    other one rank's own block), busbw, OMB's size column, and being left out of the default sweep.
    `even` switches every block method to OMB's layout (even_form)."""

    in_place_supported = False
    busbw_formula = "(n-1)/n"
    osu_size_is_block = True
    default_sweep = False
    gapped: ClassVar[str] = "recv"  # the buffer that holds every block with its gap: recv or send
    even: ClassVar[bool] = False  # OMB's layout: equal blocks in rank order, no gaps
    call_of: ClassVar[str] = ""  # an even form: the uneven collective whose library call it makes

    @property
    def blocks_note(self) -> str:
        """How the blocks lie, for the OMB export's '#' lines (OMB's Size column is the mean block)."""
        if self.even:
            return "OMB's layout: every rank's block Size bytes, in rank order"
        return (
            "uneven blocks (rank r: 2·Size·(r+1)/(n+1) bytes, rounded down), reverse rank order, one element "
            f"of gap after each; {self.name}_even has OMB's layout"
        )

    def layout(self, nbytes: int, itemsize: int, nranks: int) -> Layout:
        count = nbytes // (itemsize * nranks)
        counts = self.block_counts(count, nranks)
        own, every = int(counts.max(initial=0)), self.spread_length(counts)
        send, recv = (own, every) if self.gapped == "recv" else (every, own)
        return Layout(count=count, send_len=send, recv_len=recv, nbytes=int(counts.sum()) * itemsize)

    def busbw_factor(self, nranks: int) -> float:
        return (nranks - 1) / nranks

    def block_counts(self, count: int, nranks: int) -> np.ndarray:
        """Elements in each rank's block for a mean block of `count`."""
        return even_counts(count, nranks) if self.even else block_counts(count, nranks)

    def displacements(self, counts: np.ndarray) -> np.ndarray:
        """Where each block starts in the buffer that holds them all."""
        return packed_displacements(counts) if self.even else gapped_displacements(counts)

    def spread_length(self, counts: np.ndarray) -> int:
        """The length of the buffer that holds every block."""
        return int(counts.sum()) if self.even else gapped_length(counts)

    def block_results(
        self, buf: np.ndarray, blocks: list[np.ndarray], counts: np.ndarray
    ) -> list[tuple[np.ndarray, ...]]:
        """(actual, expected) for each rank's block at its displacement in buf."""
        return [(buf[s : s + int(k)], block) for s, k, block in zip(self.displacements(counts), counts, blocks)]

    def gaps(self, buf: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
        """The one-element gaps after each block, as views of buf: the call must leave them as they are."""
        if self.even:
            return []
        return [buf[s + int(k) : s + int(k) + 1] for s, k in zip(self.displacements(counts), counts)]

    def _counts(self, case: Case) -> np.ndarray:
        return self.block_counts(case.count, case.nranks)

    def _prepare_own_block(self, case: Case) -> None:
        """This rank's block at the head of its send buffer, sentinels after it and in recv."""
        mine = int(self._counts(case)[case.rank])
        case.send[:mine] = patterns.data_at(case.rank, 0, mine)
        patterns.sentinel_fill(case.send[mine:], case.rank, patterns.SEND)
        patterns.sentinel_fill(case.recv, case.rank)


def even_form(spec: UnevenBlocks) -> UnevenBlocks:
    """The spec's twin in OMB's layout, named `<name>_even`: the same calls and checks with equal blocks
    in rank order. Not tuned (the libraries' tuning names the uneven call's collective already) and
    without non-blocking or persistent twins of its own."""
    cls = type(spec)
    attrs = {"name": f"{spec.name}_even", "even": True, "call_of": spec.name, "vendor": None}
    return type(f"{cls.__name__}Even", (cls,), attrs)()
