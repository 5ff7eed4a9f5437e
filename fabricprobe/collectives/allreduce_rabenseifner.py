"""Rabenseifner allreduce: reduce-scatter by recursive halving, allgather by recursive doubling, with
MPICH's fold for p not a power of two. Blocks may be empty, so counts below p' need no fallback to
recursive doubling."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import block_displacements
from fabricprobe.collectives.blocks.halving_doubling import (
    doubling_allgather,
    fold_reduce,
    halving_reduce_scatter,
    unfold,
)
from fabricprobe.collectives.cost import Cost, Formula, fold, lg, pof2


def allreduce_rabenseifner(comm, sendbuf, recvbuf, op, root=0) -> None:
    folded, data = fold_reduce(comm, recvbuf, op, source=sendbuf)
    if folded.newrank >= 0:
        disps = block_displacements(recvbuf.size, folded.pof2)
        halving_reduce_scatter(comm, recvbuf, disps, folded, op, data=data)
        doubling_allgather(comm, recvbuf, disps, folded)
    unfold(comm, recvbuf, folded)


def rabenseifner_cost(n: float, p: int) -> Cost:
    q = pof2(p)
    k = lg(q)
    return Cost(messages=2 * k, nbytes=2 * (q - 1) / q * n, reduced=(q - 1) / q * n, reductions=k) + fold(n, p, True)


COST = Formula(
    "2lg p'·α + 2((p'−1)/p')nβ + ((p'−1)/p')nγ (+ fold: 2α + 2nβ + nγ)", lambda s: rabenseifner_cost(s.nbytes, s.p)
)

ALGORITHMS = (
    Algorithm(
        "rabenseifner",
        "allreduce",
        "recursive-halving reduce-scatter + recursive-doubling allgather",
        run=allreduce_rabenseifner,
        cost=COST,
    ),
)
