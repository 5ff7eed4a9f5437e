"""Allreduce as a binomial reduce to rank 0 and a binomial broadcast back."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.binomial import binomial_bcast, binomial_reduce
from fabricprobe.collectives.blocks.common import start
from fabricprobe.collectives.cost import Cost, Formula, lg


def allreduce_binomial(comm, sendbuf, recvbuf, op, root=0) -> None:
    buf = start(sendbuf, recvbuf)
    binomial_reduce(comm, buf, op, 0)
    binomial_bcast(comm, buf, 0)


def binomial_cost(n: float, p: int) -> Cost:
    k = lg(p)
    return Cost(messages=2 * k, nbytes=2 * k * n, reduced=k * n, reductions=k)


COST = Formula("2⌈lg p⌉(α + nβ) + ⌈lg p⌉nγ", lambda s: binomial_cost(s.nbytes, s.p))

ALGORITHMS = (
    Algorithm(
        "binomial", "allreduce", "binomial reduce to rank 0 + binomial broadcast", run=allreduce_binomial, cost=COST
    ),
)
