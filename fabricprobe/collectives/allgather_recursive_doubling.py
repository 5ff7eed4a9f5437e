"""Recursive doubling allgather: lg p' exchanges of doubling size.

For p not a power of two it folds as the allreduce does (even ranks below 2r hand their block to
rank + 1 first, and get the whole result back at the end: 2 extra steps). MPICH instead fills
the gaps inside its doubling steps; the fold is simpler and costs ~2α + nβ more."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import displacements_from_counts
from fabricprobe.collectives.blocks.halving_doubling import TAG_FOLD, Fold, doubling_allgather, unfold
from fabricprobe.collectives.cost import Cost, Formula, lg, pof2


def allgather_recursive_doubling(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    p, r = comm.size, comm.rank
    count = recvbuf.size // p
    if sendbuf is not None and count:
        recvbuf[r * count : (r + 1) * count] = sendbuf
    fold = Fold.of(r, p)
    if r < 2 * fold.rem:
        if r % 2 == 0:
            comm.Send(recvbuf[r * count : (r + 1) * count], dest=r + 1, tag=TAG_FOLD)
        else:
            comm.Recv(recvbuf[(r - 1) * count : r * count], source=r - 1, tag=TAG_FOLD)
    if fold.newrank >= 0:
        sizes = [count * len(fold.represented(k)) for k in range(fold.pof2)]
        doubling_allgather(comm, recvbuf, displacements_from_counts(sizes), fold)
    unfold(comm, recvbuf, fold)


def recursive_doubling_cost(n: float, p: int) -> Cost:
    q = pof2(p)
    folded = Cost() if q == p else Cost(messages=2, nbytes=n / p + n)
    return Cost(messages=lg(q), nbytes=(q - 1) / q * n) + folded


COST = Formula("lg p'·α + ((p'−1)/p')nβ (+ fold: 2α + (n/p + n)β)", lambda s: recursive_doubling_cost(s.nbytes, s.p))

ALGORITHMS = (
    Algorithm(
        "recursive_doubling",
        "allgather",
        "recursive doubling (fold for non-powers of two)",
        run=allgather_recursive_doubling,
        cost=COST,
    ),
)
