"""Single-leader hierarchical allreduce, the baseline the multi-leader design is compared with:
binomial reduce to each node's leader, ring allreduce among the leaders, binomial broadcast within
each node. Only one rank per node talks to the fabric."""

from __future__ import annotations

from fabricprobe.collectives import bcast_binomial, reduce_binomial
from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.allreduce_ring import allreduce_ring, ring_cost
from fabricprobe.collectives.blocks.binomial import binomial_bcast, binomial_reduce
from fabricprobe.collectives.blocks.common import start
from fabricprobe.collectives.cost import Cost, Formula, Shape, as_intra
from fabricprobe.mpienv import topology


def allreduce_single_leader(comm, sendbuf, recvbuf, op, root=0) -> None:
    buf = start(sendbuf, recvbuf)
    h = topology.hierarchy(comm)
    binomial_reduce(h.node, buf, op, 0)
    if h.is_leader:
        allreduce_ring(h.index, None, buf, op)
    binomial_bcast(h.node, buf, 0)


def single_leader_cost(s: Shape) -> Cost:
    n, nodes, g = s.nbytes, s.nodes, s.per_node
    intra = as_intra(reduce_binomial.binomial_cost(n, g) + bcast_binomial.binomial_cost(n, g))
    return intra + (ring_cost(n, nodes) if nodes > 1 else Cost())


COST = Formula(
    "⌈lg g⌉(α_l + nβ_l + nγ) reduce and ⌈lg g⌉(α_l + nβ_l) bcast in the node; ring allreduce of n over N leaders",
    single_leader_cost,
)

ALGORITHMS = (
    Algorithm(
        "single_leader",
        "allreduce",
        "intra-node reduce to one leader, ring allreduce among leaders, intra-node bcast",
        run=allreduce_single_leader,
        cost=COST,
    ),
)
