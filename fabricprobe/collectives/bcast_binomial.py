"""Binomial-tree broadcast from any root."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.binomial import binomial_bcast
from fabricprobe.collectives.cost import Cost, Formula, lg


def bcast_binomial(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    binomial_bcast(comm, recvbuf, root)


def binomial_cost(n: float, p: int) -> Cost:
    return Cost(messages=lg(p), nbytes=lg(p) * n)


COST = Formula("⌈lg p⌉(α + nβ)", lambda s: binomial_cost(s.nbytes, s.p))

ALGORITHMS = (Algorithm("binomial", "bcast", "binomial tree from the root", run=bcast_binomial, cost=COST),)
