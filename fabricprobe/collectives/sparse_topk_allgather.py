"""TopkA: every rank's (index, value) pairs to every rank by one allgatherv, then each rank sums
them. Exact: the result is Σ_r topk(g_r). The result's support grows with p, so it loses to a dense
allreduce once the density passes about 1/p.

Bytes sent are counted as a ring allgatherv moves them: every block but the one the rank receives last.
"""

from __future__ import annotations

import math

import numpy as np

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks import sparse_state as st
from fabricprobe.collectives.blocks.sparse_recursive import pairs_bytes, terms
from fabricprobe.collectives.cost import Cost, Formula, Shape, lg
from fabricprobe.sparse import traffic


def sparse_topk_allgather(comm, sendbuf, recvbuf, op="sum", root=0) -> None:
    from mpi4py import MPI

    st.begin()
    p, r = comm.size, comm.rank
    mine = st.from_pairs(sendbuf.idx, sendbuf.val, 0, sendbuf.n)
    out = st.message_buffer(sendbuf.n, sendbuf.val.dtype, sendbuf.nnz, slot=30)
    nbytes = st.encode(mine, out)
    sizes = np.empty(p, dtype=np.int64)
    comm.Allgather(np.array([nbytes], dtype=np.int64), sizes)
    displs = np.concatenate(([0], np.cumsum(sizes[:-1])))
    gathered = st.ARENA.get(int(sizes.sum()), np.uint8)
    comm.Allgatherv(out[:nbytes], [gathered, sizes, displs, MPI.BYTE])
    traffic.add(int(sizes.sum() - sizes[(r + 1) % p]) if p > 1 else 0)
    states = [
        st.decode_state(gathered[displs[q] : displs[q] + sizes[q]], 0, sendbuf.n, sendbuf.val.dtype) for q in range(p)
    ]
    st.store(st.merge_all(states), recvbuf)


def topk_allgather_cost(s: Shape) -> Cost:
    _, k = terms(s)
    p = s.p
    return Cost(
        messages=lg(p) + p - 1,
        nbytes=(p - 1) * pairs_bytes(k, s.itemsize, math.inf),
        reduced=p * k * s.itemsize,
        reductions=max(p - 1, 0),
    )


COST = Formula("(⌈lg p⌉ + p − 1)α + (p−1)·k·w·β + p·k·itemsize·γ, w = 4 + itemsize bytes per pair", topk_allgather_cost)

ALGORITHMS = (
    Algorithm(
        "topk_allgather",
        "sparse_allreduce",
        "TopkA: allgatherv of every rank's pairs, local sum (exact)",
        run=sparse_topk_allgather,
        unrunnable=st.staged_only,
        cost=COST,
    ),
)
