"""Multi-leader hierarchical allreduce (Nguyen, Wahib & Takano 2018), on the active topology.

1. Intra-node ring reduce-scatter: local rank j ends owning segment j of the node's sum.
2. Inter-node: the ranks that share local index j (one per node) allreduce segment j — all g
   leaders at once, so every NIC queue and every core is busy. The inter-node algorithm is
   selectable: ring ("hierarchical", the paper's lr_lr), Rabenseifner (lr_rab) or recursive
   doubling.
3. Intra-node ring allgather of the g segments.

Uneven nodes (e.g. 3+3+2): the buffer is split into as many segments as the smallest node has
ranks; on larger nodes the extra ranks contribute to the reduce-scatter but own no segment.
"""

from __future__ import annotations

from functools import lru_cache

from fabricprobe.collectives.allreduce_rabenseifner import allreduce_rabenseifner
from fabricprobe.collectives.allreduce_recursive_doubling import allreduce_recursive_doubling
from fabricprobe.collectives.allreduce_ring import allreduce_ring
from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.common import block_displacements, displacements_from_counts
from fabricprobe.collectives.ring import allgather_ring, reduce_scatter_ring
from fabricprobe.mpienv import topology

INTER = {"ring": allreduce_ring, "rabenseifner": allreduce_rabenseifner, "recursive_doubling": allreduce_recursive_doubling}


def allreduce_hierarchical(comm, sendbuf, recvbuf, op, root=0, inter: str = "ring") -> None:
    buf = recvbuf
    h = topology.hierarchy(comm)
    segments, node_disps = _layout(buf.size, h.min_local, h.local_size)
    reduce_scatter_ring(h.node, buf, node_disps, op, source=sendbuf)
    if h.local_rank < h.min_local:
        j = h.local_rank
        INTER[inter](h.index, None, buf[segments[j]:segments[j + 1]], op)
    allgather_ring(h.node, buf, node_disps)


@lru_cache(maxsize=256)
def _layout(count: int, leaders: int, local_size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Segment offsets (one per leader) and the node ring's blocks (empty for non-leaders)."""
    segments = block_displacements(count, leaders)
    sizes = [segments[j + 1] - segments[j] if j < leaders else 0 for j in range(local_size)]
    return segments, displacements_from_counts(sizes)


def _variant(inter: str):
    def run(comm, sendbuf, recvbuf, op, root=0) -> None:
        allreduce_hierarchical(comm, sendbuf, recvbuf, op, root, inter=inter)

    return run


ALGORITHMS = [
    register(Algorithm("hierarchical", "allreduce",
                       "multi-leader: intra-node ring reduce-scatter, concurrent inter-node ring allreduces, "
                       "intra-node ring allgather (lr_lr)", run=_variant("ring"))),
    register(Algorithm("hierarchical_rab", "allreduce",
                       "multi-leader with Rabenseifner between nodes (lr_rab)", run=_variant("rabenseifner"))),
    register(Algorithm("hierarchical_rd", "allreduce",
                       "multi-leader with recursive doubling between nodes", run=_variant("recursive_doubling"))),
]
