"""Ring allreduce: ring reduce-scatter, then ring allgather. 2(p−1)α + 2((p−1)/p)nβ + ((p−1)/p)nγ."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.common import block_displacements, start
from fabricprobe.collectives.ring import allgather_ring, reduce_scatter_ring


def allreduce_ring(comm, sendbuf, recvbuf, op, root=0) -> None:
    buf = start(sendbuf, recvbuf)
    disps = block_displacements(buf.size, comm.size)
    reduce_scatter_ring(comm, buf, disps, op)
    allgather_ring(comm, buf, disps)


ALGORITHM = register(Algorithm("ring", "allreduce", "ring reduce-scatter + ring allgather (bandwidth-optimal)",
                               run=allreduce_ring))
