"""Recursive halving / doubling over a power-of-two set of ranks, with MPICH's fold for the rest.

Fold (p not a power of two, p' = largest power of two below p, r = p - p'): of the first 2r ranks,
each even rank hands its data to the odd rank above it and sits out; the p' survivors are
renumbered (odd rank 2k+1 -> k, rank q >= 2r -> q - r) and run the power-of-two algorithm;
afterwards each odd rank < 2r hands the result back to the even rank below it. Cost: ~2α + nβ
(+ nγ when the fold reduces).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fabricprobe import kernels
from fabricprobe.collectives.blocks.common import copy_into, pof2_below, scratch

TAG_FOLD, TAG_HALVING, TAG_DOUBLING, TAG_UNFOLD = 101, 102, 103, 104


@dataclass(frozen=True)
class Fold:
    rank: int
    size: int
    pof2: int
    rem: int
    newrank: int  # -1 when this rank sits out

    @classmethod
    def of(cls, rank: int, size: int) -> "Fold":
        pof2 = pof2_below(size)
        rem = size - pof2
        if rank < 2 * rem:
            newrank = -1 if rank % 2 == 0 else rank // 2
        else:
            newrank = rank - rem
        return cls(rank, size, pof2, rem, newrank)

    def real(self, newrank: int) -> int:
        """The actual rank of survivor `newrank`."""
        return 2 * newrank + 1 if newrank < self.rem else newrank + self.rem

    def represented(self, newrank: int) -> tuple[int, ...]:
        """The actual ranks whose data survivor `newrank` carries (in rank order)."""
        return (2 * newrank, 2 * newrank + 1) if newrank < self.rem else (newrank + self.rem,)


def fold_reduce(comm: Any, buf: Any, op: str, source: Any | None = None) -> tuple[Fold, Any]:
    """Fold by reduction: even ranks below 2r send their whole input to rank + 1.

    Returns the fold and where this rank's (possibly folded) data now is: buf once something has
    been written there, else still `source` (out-of-place input, never copied)."""
    fold = Fold.of(comm.rank, comm.size)
    data = buf if source is None else source
    if fold.rank < 2 * fold.rem:
        if fold.rank % 2 == 0:
            comm.Send(data, dest=fold.rank + 1, tag=TAG_FOLD)
        else:
            tmp = scratch(buf.size, buf)
            comm.Recv(tmp, source=fold.rank - 1, tag=TAG_FOLD)
            reduce_to(buf, data, tmp, op)
            data = buf
    return fold, data


def reduce_to(out: Any, mine: Any, incoming: Any, op: str) -> None:
    """out = mine (op) incoming, in one pass when mine is not out."""
    if mine is out:
        kernels.reduce_into(out, incoming, op)
    else:
        kernels.reduce_pair(out, mine, incoming, op)


def unfold(comm: Any, buf: Any, fold: Fold) -> None:
    """Hand the final buffer from each odd rank below 2r to the even rank below it."""
    if fold.rank < 2 * fold.rem:
        if fold.rank % 2 == 1:
            comm.Send(buf, dest=fold.rank - 1, tag=TAG_UNFOLD)
        else:
            comm.Recv(buf, source=fold.rank + 1, tag=TAG_UNFOLD)


def halving_reduce_scatter(
    comm: Any, buf: Any, disps: tuple[int, ...], fold: Fold, op: str, data: Any | None = None
) -> tuple[int, int]:
    """Recursive halving over the p' survivors: distance p'/2, p'/4, ..., 1.

    `disps` (p'+1 offsets) splits buf into p' blocks. At each step a survivor keeps the half of its
    current block range on its side of the partner, sends the other half and reduces what it
    receives into the kept half. Survivor k ends owning block k, fully reduced, in buf. `data`
    holds the survivor's input when it is not yet in buf; the first step reads it directly.
    Returns the owned element range.
    """
    data = buf if data is None else data
    if fold.pof2 == 1 and data is not buf and buf.size:
        copy_into(buf, data)
    lo, hi = 0, fold.pof2
    distance = fold.pof2 // 2
    while distance >= 1:
        partner = fold.real(fold.newrank ^ distance)
        mid = (lo + hi) // 2
        if fold.newrank & distance == 0:
            keep, send = (lo, mid), (mid, hi)
        else:
            keep, send = (mid, hi), (lo, mid)
        k0, k1 = disps[keep[0]], disps[keep[1]]
        s0, s1 = disps[send[0]], disps[send[1]]
        tmp = scratch(k1 - k0, buf)
        comm.Sendrecv(data[s0:s1], dest=partner, sendtag=TAG_HALVING, recvbuf=tmp, source=partner, recvtag=TAG_HALVING)
        reduce_to(buf[k0:k1], data[k0:k1], tmp, op)
        data = buf  # everything later steps touch lies inside the kept half, now in buf
        lo, hi = keep
        distance //= 2
    return disps[lo], disps[hi]


def doubling_allgather(comm: Any, buf: Any, disps: tuple[int, ...], fold: Fold) -> None:
    """Recursive doubling over the p' survivors: distance 1, 2, ..., p'/2.

    Survivor k starts owning block k and at each step swaps its whole owned range with the
    partner's adjacent, equally long range; after lg p' steps every survivor holds every block.
    """
    lo, hi = fold.newrank, fold.newrank + 1
    distance = 1
    while distance < fold.pof2:
        partner = fold.real(fold.newrank ^ distance)
        width = hi - lo
        other = (hi, hi + width) if fold.newrank & distance == 0 else (lo - width, lo)
        o0, o1 = disps[other[0]], disps[other[1]]
        comm.Sendrecv(
            buf[disps[lo] : disps[hi]],
            dest=partner,
            sendtag=TAG_DOUBLING,
            recvbuf=buf[o0:o1],
            source=partner,
            recvtag=TAG_DOUBLING,
        )
        lo, hi = min(lo, other[0]), max(hi, other[1])
        distance *= 2
