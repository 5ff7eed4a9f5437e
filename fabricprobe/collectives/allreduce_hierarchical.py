"""Multi-leader hierarchical allreduce (Nguyen, Wahib & Takano 2018), on the active topology.

1. Intra-node ring reduce-scatter: local rank j ends owning segment j of the node's sum.
2. Inter-node: the ranks that share local index j (one per node) allreduce segment j — all g
   leaders at once, so every NIC queue and every core is busy. The inter-node algorithm is
   selectable: ring ("hierarchical", the paper's lr_lr), Rabenseifner (lr_rab) or recursive
   doubling.
3. Intra-node ring allgather of the g segments.

Uneven nodes (e.g. 3+3+2): the buffer is split into as many segments as the smallest node has
ranks; on larger nodes the extra ranks contribute to the reduce-scatter but own no segment.

Cost on N nodes of g ranks: the intra-node ring steps on the intra link, then g concurrent inter-node
allreduces of n/g over N nodes on the inter link; the g flows leave a node through one link, so their
β is g·β (nic sharing). NIC-bound, that equals a single leader's volume with 2(N−1) instead of 2(P−1)
latencies and 1/g of the reduction per process: the paper's argument.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

from fabricprobe.collectives import allgather_ring, allreduce_rabenseifner, allreduce_recursive_doubling, allreduce_ring
from fabricprobe.collectives import reduce_scatter_ring as rs_ring
from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks.common import block_displacements, displacements_from_counts
from fabricprobe.collectives.blocks.ring import ring_allgather, ring_reduce_scatter
from fabricprobe.collectives.cost import Cost, Formula, Shape, as_intra
from fabricprobe.mpienv import topology

INTER = {
    "ring": allreduce_ring.allreduce_ring,
    "rabenseifner": allreduce_rabenseifner.allreduce_rabenseifner,
    "recursive_doubling": allreduce_recursive_doubling.allreduce_recursive_doubling,
}


def allreduce_hierarchical(comm, sendbuf, recvbuf, op, root=0, inter: str = "ring") -> None:
    buf = recvbuf
    h = topology.hierarchy(comm)
    segments, node_disps = _layout(buf.size, h.min_local, h.local_size)
    ring_reduce_scatter(h.node, buf, node_disps, op, source=sendbuf)
    if h.local_rank < h.min_local:
        j = h.local_rank
        INTER[inter](h.index, None, buf[segments[j] : segments[j + 1]], op)
    ring_allgather(h.node, buf, node_disps)


@lru_cache(maxsize=256)
def _layout(count: int, leaders: int, local_size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Segment offsets (one per leader) and the node ring's blocks (empty for non-leaders)."""
    segments = block_displacements(count, leaders)
    sizes = [segments[j + 1] - segments[j] if j < leaders else 0 for j in range(local_size)]
    return segments, displacements_from_counts(sizes)


def hierarchical_cost(inter: Callable[[float, int], Cost]) -> Callable[[Shape], Cost]:
    def cost(s: Shape) -> Cost:
        n, nodes, g = s.nbytes, s.nodes, s.per_node
        intra = as_intra(rs_ring.ring_cost(n, g) + allgather_ring.ring_cost(n, g))
        return intra + (inter(n / g, nodes) if nodes > 1 else Cost()) + Cost(flows=g)

    return cost


def _variant(inter: str):
    def run(comm, sendbuf, recvbuf, op, root=0) -> None:
        allreduce_hierarchical(comm, sendbuf, recvbuf, op, root, inter=inter)

    return run


INTRA = "2(g−1)(α_l + (n/g)β_l) + ((g−1)/g)nγ in the node"
ALGORITHMS = (
    Algorithm(
        "hierarchical",
        "allreduce",
        "multi-leader: intra-node ring reduce-scatter, concurrent inter-node ring allreduces, "
        "intra-node ring allgather (lr_lr)",
        run=_variant("ring"),
        cost=Formula(
            f"{INTRA}; g concurrent ring allreduces of n/g over N nodes (β_g shared g ways)",
            hierarchical_cost(allreduce_ring.ring_cost),
        ),
    ),
    Algorithm(
        "hierarchical_rab",
        "allreduce",
        "multi-leader with Rabenseifner between nodes (lr_rab)",
        run=_variant("rabenseifner"),
        cost=Formula(
            f"{INTRA}; g concurrent Rabenseifner allreduces of n/g over N nodes",
            hierarchical_cost(allreduce_rabenseifner.rabenseifner_cost),
        ),
    ),
    Algorithm(
        "hierarchical_rd",
        "allreduce",
        "multi-leader with recursive doubling between nodes",
        run=_variant("recursive_doubling"),
        cost=Formula(
            f"{INTRA}; g concurrent recursive-doubling allreduces of n/g over N nodes",
            hierarchical_cost(allreduce_recursive_doubling.recursive_doubling_cost),
        ),
    ),
)
