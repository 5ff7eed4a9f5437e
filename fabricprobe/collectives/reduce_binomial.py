"""Binomial-tree reduce to any root."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.binomial import binomial_reduce
from fabricprobe.collectives.blocks.common import copy_into, scratch
from fabricprobe.collectives.cost import Cost, Formula, lg


def reduce_binomial(comm, sendbuf, recvbuf, op, root=0) -> None:
    if comm.rank == root:
        buf = recvbuf
        if sendbuf is not None and buf.size:
            copy_into(buf, sendbuf)
    else:  # the input must survive: accumulate in a scratch copy
        source = recvbuf if sendbuf is None else sendbuf
        buf = scratch(source.size, source, slot=2)
        if buf.size:
            copy_into(buf, source)
    binomial_reduce(comm, buf, op, root)


def binomial_cost(n: float, p: int) -> Cost:
    k = lg(p)
    return Cost(messages=k, nbytes=k * n, reduced=k * n, reductions=k)


COST = Formula("⌈lg p⌉(α + nβ + nγ)", lambda s: binomial_cost(s.nbytes, s.p))

ALGORITHMS = (Algorithm("binomial", "reduce", "binomial tree to the root", run=reduce_binomial, cost=COST),)
