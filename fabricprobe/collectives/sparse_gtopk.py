"""gTop-k (Shi et al., ICDCS 2019): recursive doubling in which each merge of two k-sparse vectors
is cut back to its k largest magnitudes, so messages stay at k pairs. Any p (MPICH's fold).
Approximate: the result is k-sparse and differs from the sum of the
sparsified inputs wherever a contribution was cut on the way (docs/sparse.md)."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks import sparse_state as st
from fabricprobe.collectives.blocks.sparse_recursive import recursive_cost, recursive_exchange, terms
from fabricprobe.collectives.cost import Cost, Formula, Shape


def sparse_gtopk(comm, sendbuf, recvbuf, op="sum", root=0) -> None:
    st.begin()
    state = st.from_pairs(sendbuf.idx, sendbuf.val, 0, sendbuf.n)
    st.store(recursive_exchange(comm, state, reselect=sendbuf.nnz, switch=False), recvbuf)


def gtopk_cost(s: Shape) -> Cost:
    n, k = terms(s)
    return recursive_cost(n, k, s.p, s.itemsize, reselect=True)


COST = Formula("lg p'·(α + k·w·β) (+ fold), w = 4 + itemsize bytes per pair", gtopk_cost)

ALGORITHMS = (
    Algorithm(
        "gtopk",
        "sparse_allreduce",
        "gTop-k: recursive doubling, re-selecting the k largest at each step (approximate)",
        run=sparse_gtopk,
        semantics="gtopk",
        unrunnable=st.staged_only,
        cost=COST,
    ),
)
