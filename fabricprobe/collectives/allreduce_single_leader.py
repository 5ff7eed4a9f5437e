"""Single-leader hierarchical allreduce, the baseline the multi-leader design is compared with:
binomial reduce to each node's leader, ring allreduce among the leaders, binomial broadcast
within each node. Only one rank per node talks to the fabric."""

from __future__ import annotations

from fabricprobe.collectives.allreduce_ring import allreduce_ring
from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.binomial import bcast_binomial, reduce_binomial
from fabricprobe.collectives.common import start
from fabricprobe.mpienv import topology


def allreduce_single_leader(comm, sendbuf, recvbuf, op, root=0) -> None:
    buf = start(sendbuf, recvbuf)
    h = topology.hierarchy(comm)
    reduce_binomial(h.node, buf, op, 0)
    if h.is_leader:
        allreduce_ring(h.index, None, buf, op)
    bcast_binomial(h.node, buf, 0)


ALGORITHM = register(Algorithm("single_leader", "allreduce",
                               "intra-node reduce to one leader, ring allreduce among leaders, intra-node bcast",
                               run=allreduce_single_leader))
