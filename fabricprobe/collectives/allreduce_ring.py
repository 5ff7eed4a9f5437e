"""Ring allreduce: ring reduce-scatter, then ring allgather. 2(p−1)α + 2((p−1)/p)nβ + ((p−1)/p)nγ."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.common import block_displacements
from fabricprobe.collectives.ring import allgather_ring, reduce_scatter_ring


def allreduce_ring(comm, sendbuf, recvbuf, op, root=0) -> None:
    disps = block_displacements(recvbuf.size, comm.size)
    reduce_scatter_ring(comm, recvbuf, disps, op, source=sendbuf)
    allgather_ring(comm, recvbuf, disps)


ALGORITHM = register(Algorithm("ring", "allreduce", "ring reduce-scatter + ring allgather (bandwidth-optimal)",
                               run=allreduce_ring))
