"""Ring allreduce: ring reduce-scatter, then ring allgather, on any p (bandwidth-optimal)."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import block_displacements
from fabricprobe.collectives.blocks.ring import ring_allgather, ring_reduce_scatter
from fabricprobe.collectives.cost import Cost, Formula


def allreduce_ring(comm, sendbuf, recvbuf, op, root=0) -> None:
    disps = block_displacements(recvbuf.size, comm.size)
    ring_reduce_scatter(comm, recvbuf, disps, op, source=sendbuf)
    ring_allgather(comm, recvbuf, disps)


def ring_cost(n: float, p: int) -> Cost:
    return Cost(messages=2 * (p - 1), nbytes=2 * (p - 1) / p * n, reduced=(p - 1) / p * n, reductions=p - 1)


COST = Formula("2(p−1)α + 2((p−1)/p)nβ + ((p−1)/p)nγ", lambda s: ring_cost(s.nbytes, s.p))

ALGORITHMS = (
    Algorithm(
        "ring", "allreduce", "ring reduce-scatter + ring allgather (bandwidth-optimal)", run=allreduce_ring, cost=COST
    ),
)
