"""Topology-aware sparse allreduce (in the spirit of Nguyen, Wahib & Takano 2019): sum sparse vectors
inside each node over the fast links first, so only one exchange per node — or per index region —
crosses the slow fabric. Both variants are exact.

- sparse_hier_leader: binomial sparse reduce to each node's leader, SparCML exchange among the
  leaders (lg N rounds on the fabric instead of lg P), binomial broadcast inside each node.
- sparse_hier_index: the index space is cut into as many regions as the smallest node has ranks;
  local rank j gathers and sums region j of every vector of its node, the ranks with local index j
  run a SparCML exchange of region j among the nodes (all g regions at once, as the multi-leader
  dense algorithm does), and each node allgathers its regions.
"""

from __future__ import annotations

import numpy as np

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks import sparse_state as st
from fabricprobe.collectives.blocks.common import block_displacements
from fabricprobe.collectives.blocks.sparse_recursive import pairs_bytes, recursive_cost, recursive_exchange, terms
from fabricprobe.collectives.cost import Cost, Formula, Shape, lg
from fabricprobe.mpienv import topology
from fabricprobe.sparse import traffic


def _reduce_to_leader(node, state: st.State) -> st.State:
    """Binomial sparse reduce to local rank 0 of node."""
    p, rel = node.size, node.rank
    mask = 1
    while mask < p:
        if rel & mask:
            st.send(node, rel - mask, state)
            return state
        if rel + mask < p:
            incoming = st.recv(node, rel + mask, state.offset, state.length, state.dtype, state.length)
            state = st.merge(state, incoming).switch_if_full()
        mask <<= 1
    return state


def _bcast_from_leader(node, state: st.State | None, offset: int, length: int, dtype) -> st.State:
    p, rel = node.size, node.rank
    mask = 1
    while mask < p:
        if rel & mask:
            state = st.recv(node, rel - mask, offset, length, dtype, length)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            st.send(node, rel + mask, state)
        mask >>= 1
    return state


def sparse_hier_leader(comm, sendbuf, recvbuf, op="sum", root=0) -> None:
    st.begin()
    h = topology.hierarchy(comm)
    dtype = sendbuf.val.dtype
    state = _reduce_to_leader(h.node, st.from_pairs(sendbuf.idx, sendbuf.val, 0, sendbuf.n))
    if h.is_leader:
        state = recursive_exchange(h.index, state, reselect=None, switch=True)
    st.store(_bcast_from_leader(h.node, state if h.is_leader else None, 0, sendbuf.n, dtype), recvbuf)


def sparse_hier_index(comm, sendbuf, recvbuf, op="sum", root=0) -> None:
    from mpi4py import MPI

    st.begin()
    h = topology.hierarchy(comm)
    node, g, n, dtype = h.node, h.min_local, sendbuf.n, sendbuf.val.dtype
    regions = block_displacements(n, g)
    # 1. Region j of this rank's vector goes to local rank j (ranks beyond the smallest node's size own none).
    # keys of the indices' own type: int64 keys would make searchsorted copy all the indices to int64
    cuts = np.searchsorted(sendbuf.idx, np.asarray(regions, dtype=sendbuf.idx.dtype))
    sizes = np.zeros(node.size, dtype=np.int64)
    parts = []
    for j in range(g):
        part = st.from_pairs(
            sendbuf.idx[cuts[j] : cuts[j + 1]],
            sendbuf.val[cuts[j] : cuts[j + 1]],
            regions[j],
            regions[j + 1] - regions[j],
        )
        parts.append(part)
        sizes[j] = part.wire_bytes()
    send_displs = np.concatenate(([0], np.cumsum(sizes[:-1])))
    out = st.ARENA.get(int(sizes.sum()), np.uint8)
    for j, part in enumerate(parts):
        st.encode(part, out[send_displs[j] : send_displs[j] + sizes[j]])
    recv_sizes = np.empty(node.size, dtype=np.int64)
    node.Alltoall(sizes, recv_sizes)
    recv_displs = np.concatenate(([0], np.cumsum(recv_sizes[:-1])))
    inbox = st.ARENA.get(int(recv_sizes.sum()), np.uint8)
    node.Alltoallv([out, sizes, send_displs, MPI.BYTE], [inbox, recv_sizes, recv_displs, MPI.BYTE])
    traffic.add(int(sizes.sum() - (sizes[node.rank] if node.rank < g else 0)))
    # 2. Owners sum their region over the node, then across nodes among the ranks of the same local index.
    j = node.rank
    if j < g:
        lo, length = regions[j], regions[j + 1] - regions[j]
        states = [
            st.decode_state(inbox[recv_displs[q] : recv_displs[q] + recv_sizes[q]], lo, length, dtype)
            for q in range(node.size)
        ]
        mine = recursive_exchange(h.index, st.merge_all(states).switch_if_full(), reselect=None, switch=True)
        nbytes = mine.wire_bytes()
        msg = st.ARENA.get(nbytes, np.uint8)
        st.encode(mine, msg)
    else:
        nbytes, msg = 0, st.ARENA.get(0, np.uint8)
    # 3. Every rank of the node gathers all regions.
    all_sizes = np.empty(node.size, dtype=np.int64)
    node.Allgather(np.array([nbytes], dtype=np.int64), all_sizes)
    displs = np.concatenate(([0], np.cumsum(all_sizes[:-1])))
    gathered = st.ARENA.get(int(all_sizes.sum()), np.uint8)
    node.Allgatherv(msg[:nbytes], [gathered, all_sizes, displs, MPI.BYTE])
    traffic.add(nbytes * (node.size - 1))
    pieces = [
        st.decode_state(gathered[displs[q] : displs[q] + all_sizes[q]], regions[q], regions[q + 1] - regions[q], dtype)
        for q in range(g)
    ]
    st.store_regions(pieces, recvbuf)


def hier_leader_cost(s: Shape) -> Cost:
    n, k = terms(s)
    nodes, g, w = s.nodes, s.per_node, s.itemsize
    intra = Cost()
    state = k
    for _ in range(lg(g)):  # binomial reduce, then broadcast of the node's union
        intra += Cost(intra_messages=1, intra_bytes=pairs_bytes(state, w, n), reduced=2 * state * w, reductions=1)
        state = min(2 * state, n)
    inter = recursive_cost(n, min(g * k, n), nodes, w, reselect=False) if nodes > 1 else Cost()
    final = min(nodes * g * k, n)
    bcast = Cost(intra_messages=lg(g), intra_bytes=lg(g) * pairs_bytes(final, w, n))
    return intra + inter + bcast


def hier_index_cost(s: Shape) -> Cost:
    n, k = terms(s)
    nodes, g, w = s.nodes, s.per_node, s.itemsize
    region = n / g
    scatter = Cost(
        intra_messages=g - 1,
        intra_bytes=(g - 1) * pairs_bytes(k / g, w, region),
        reduced=g * k / g * w,
        reductions=max(g - 1, 0),
    )
    inter = recursive_cost(region, min(k, region), nodes, w, reselect=False) if nodes > 1 else Cost()
    final = min(nodes * k, region)
    gather = Cost(intra_messages=g - 1, intra_bytes=(g - 1) * pairs_bytes(final, w, region))
    return scatter + inter + gather + Cost(flows=g)


ALGORITHMS = (
    Algorithm(
        "sparse_hier_leader",
        "sparse_allreduce",
        "intra-node sparse reduce to a leader, SparCML among leaders, intra-node bcast (exact)",
        run=sparse_hier_leader,
        unrunnable=st.staged_only,
        cost=Formula(
            "binomial sparse reduce and bcast in the node (⌈lg g⌉ steps each); SparCML of the "
            "nodes' unions over N leaders",
            hier_leader_cost,
        ),
    ),
    Algorithm(
        "sparse_hier_index",
        "sparse_allreduce",
        "per local index: intra-node sparse reduce-scatter by region, SparCML per region across "
        "nodes, intra-node allgather (exact)",
        run=sparse_hier_index,
        unrunnable=st.staged_only,
        cost=Formula(
            "g−1 intra-node messages of the k/g pairs per region each way; g concurrent SparCML "
            "exchanges of n/g-element regions over N nodes",
            hier_index_cost,
        ),
    ),
)
