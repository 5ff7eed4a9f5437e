"""SparCML's sparse recursive doubling (SSAR_Recursive_double, Renggli et al. SC'19): exchange and
sum sparse vectors whose support grows each step; once the pairs would take more bytes than the
dense values, continue dense. Exact. Any p (MPICH's fold)."""

from __future__ import annotations

from fabricprobe.collectives.algorithm import Algorithm
from fabricprobe.collectives.blocks import sparse_state as st
from fabricprobe.collectives.blocks.sparse_recursive import recursive_cost, recursive_exchange, terms
from fabricprobe.collectives.cost import Cost, Formula, Shape


def sparse_sparcml(comm, sendbuf, recvbuf, op="sum", root=0) -> None:
    st.begin()
    state = st.from_pairs(sendbuf.idx, sendbuf.val, 0, sendbuf.n)
    st.store(recursive_exchange(comm, state, reselect=None, switch=True), recvbuf)


def sparcml_cost(s: Shape) -> Cost:
    n, k = terms(s)
    return recursive_cost(n, k, s.p, s.itemsize, reselect=False)


COST = Formula(
    "Σ over lg p' steps of α + min(2^i·k·w, n·itemsize)β (+ fold): the support doubles until dense", sparcml_cost
)

ALGORITHMS = (
    Algorithm(
        "sparcml",
        "sparse_allreduce",
        "SparCML: sparse recursive doubling, switching to dense when full (exact)",
        run=sparse_sparcml,
        unrunnable=st.staged_only,
        cost=COST,
    ),
)
