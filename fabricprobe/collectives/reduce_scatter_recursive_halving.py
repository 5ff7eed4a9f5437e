"""Reduce-scatter (block) by recursive halving, with MPICH's fold for p not a power of two.

After the fold, survivor k carries ranks (2k, 2k+1) or (k + r); its "block" is the contiguous
run of those ranks' blocks, so halving leaves it holding exactly what they need."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import displacements_from_counts, scratch
from fabricprobe.collectives.blocks.halving_doubling import TAG_UNFOLD, fold_reduce, halving_reduce_scatter
from fabricprobe.collectives.cost import Cost, Formula, lg, pof2


def reduce_scatter_recursive_halving(comm, sendbuf, recvbuf, op, root=0) -> None:
    p, r = comm.size, comm.rank
    if sendbuf is None:
        work, count = recvbuf, recvbuf.size // p
    else:  # the input is read where it is; partial sums go to a scratch buffer
        count = recvbuf.size
        work = scratch(sendbuf.size, sendbuf, slot=3)
    fold, data = fold_reduce(comm, work, op, source=sendbuf)
    if fold.newrank >= 0:
        sizes = [count * len(fold.represented(k)) for k in range(fold.pof2)]
        halving_reduce_scatter(comm, work, displacements_from_counts(sizes), fold, op, data=data)
    # Survivors carrying two ranks hand the even rank its block.
    if r < 2 * fold.rem:
        if r % 2 == 1:
            comm.Send(work[(r - 1) * count : r * count], dest=r - 1, tag=TAG_UNFOLD)
        else:
            comm.Recv(work[r * count : (r + 1) * count], source=r + 1, tag=TAG_UNFOLD)
    if count:
        recvbuf[:count] = work[r * count : (r + 1) * count]


def recursive_halving_cost(n: float, p: int) -> Cost:
    q = pof2(p)
    k = lg(q)
    folded = Cost() if q == p else Cost(messages=2, nbytes=n + n / p, reduced=n, reductions=1)
    return Cost(messages=k, nbytes=(q - 1) / q * n, reduced=(q - 1) / q * n, reductions=k) + folded


COST = Formula(
    "lg p'·α + ((p'−1)/p')n(β + γ) (+ fold: 2α + (n + n/p)β + nγ)", lambda s: recursive_halving_cost(s.nbytes, s.p)
)

ALGORITHMS = (
    Algorithm(
        "recursive_halving",
        "reduce_scatter",
        "recursive halving (distance p/2, p/4, ..., 1)",
        run=reduce_scatter_recursive_halving,
        cost=COST,
    ),
)
