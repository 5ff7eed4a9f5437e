"""Ring reduce-scatter (block): p−1 steps, each sending one block to the right neighbour and reducing
the one from the left; any p."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import block_displacements, scratch
from fabricprobe.collectives.blocks.ring import ring_reduce_scatter
from fabricprobe.collectives.cost import Cost, Formula


def reduce_scatter_ring(comm, sendbuf, recvbuf, op, root=0) -> None:
    p, r = comm.size, comm.rank
    if sendbuf is None:  # in place: recvbuf holds all p blocks and gets block r at its start
        work, count = recvbuf, recvbuf.size // p
    else:  # the input is read where it is; partial sums go to a scratch buffer
        count = recvbuf.size
        work = scratch(sendbuf.size, sendbuf, slot=3)
    disps = block_displacements(count * p, p)
    ring_reduce_scatter(comm, work, disps, op, source=sendbuf)
    if count:
        recvbuf[:count] = work[r * count : (r + 1) * count]


def ring_cost(n: float, p: int) -> Cost:
    return Cost(messages=p - 1, nbytes=(p - 1) / p * n, reduced=(p - 1) / p * n, reductions=p - 1)


COST = Formula("(p−1)α + ((p−1)/p)n(β + γ)", lambda s: ring_cost(s.nbytes, s.p))

ALGORITHMS = (Algorithm("ring", "reduce_scatter", "ring: p−1 neighbour steps", run=reduce_scatter_ring, cost=COST),)
