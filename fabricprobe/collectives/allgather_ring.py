"""Ring allgather: p−1 neighbour steps; any p."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import block_displacements
from fabricprobe.collectives.blocks.ring import ring_allgather
from fabricprobe.collectives.cost import Cost, Formula


def allgather_ring(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    p, r = comm.size, comm.rank
    count = recvbuf.size // p
    if sendbuf is not None and count:
        recvbuf[r * count : (r + 1) * count] = sendbuf
    ring_allgather(comm, recvbuf, block_displacements(count * p, p))


def ring_cost(n: float, p: int) -> Cost:
    return Cost(messages=p - 1, nbytes=(p - 1) / p * n)


COST = Formula("(p−1)α + ((p−1)/p)nβ", lambda s: ring_cost(s.nbytes, s.p))

ALGORITHMS = (Algorithm("ring", "allgather", "ring: p−1 neighbour steps", run=allgather_ring, cost=COST),)
