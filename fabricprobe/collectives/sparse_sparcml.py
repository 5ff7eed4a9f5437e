"""SparCML's sparse recursive doubling (SSAR_Recursive_double, Renggli et al. SC'19): exchange and
sum sparse vectors whose support grows each step; once the pairs would take more bytes than the
dense values, continue dense. Exact. Any p (MPICH's fold)."""

from __future__ import annotations

from fabricprobe.collectives import sparse_state as st
from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.sparse_recursive import recursive_exchange


def sparse_sparcml(comm, sendbuf, recvbuf, op="sum", root=0) -> None:
    st.begin()
    state = st.from_pairs(sendbuf.idx, sendbuf.val, 0, sendbuf.n)
    st.store(recursive_exchange(comm, state, reselect=None, switch=True), recvbuf)


ALGORITHM = register(Algorithm("sparcml", "sparse_allreduce",
                               "SparCML: sparse recursive doubling, switching to dense when full (exact)",
                               run=sparse_sparcml))
