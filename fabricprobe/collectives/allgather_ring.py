"""Ring allgather: p−1 neighbour steps. (p−1)α + ((p−1)/p)nβ; any p."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.common import block_displacements
from fabricprobe.collectives.ring import allgather_ring


def allgather_ring_algorithm(comm, sendbuf, recvbuf, op=None, root=0) -> None:
    p, r = comm.size, comm.rank
    count = recvbuf.size // p
    if sendbuf is not None and count:
        recvbuf[r * count:(r + 1) * count] = sendbuf
    allgather_ring(comm, recvbuf, block_displacements(count * p, p))


ALGORITHM = register(Algorithm("ring", "allgather", "ring: p−1 neighbour steps", run=allgather_ring_algorithm))
