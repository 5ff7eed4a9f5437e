"""Ring reduce-scatter (block): p−1 steps, each sending one block to the right neighbour and
reducing the one from the left. (p−1)α + ((p−1)/p)n(β + γ); any p."""

from __future__ import annotations

from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.common import block_displacements, scratch
from fabricprobe.collectives.ring import reduce_scatter_ring


def reduce_scatter_ring_algorithm(comm, sendbuf, recvbuf, op, root=0) -> None:
    p, r = comm.size, comm.rank
    if sendbuf is None:  # in place: recvbuf holds all p blocks and gets block r at its start
        work, count = recvbuf, recvbuf.size // p
    else:  # the input is read where it is; partial sums go to a scratch buffer
        count = recvbuf.size
        work = scratch(sendbuf.size, sendbuf, slot=3)
    disps = block_displacements(count * p, p)
    reduce_scatter_ring(comm, work, disps, op, source=sendbuf)
    if count:
        recvbuf[:count] = work[r * count:(r + 1) * count]


ALGORITHM = register(Algorithm("ring", "reduce_scatter", "ring: p−1 neighbour steps", run=reduce_scatter_ring_algorithm))
