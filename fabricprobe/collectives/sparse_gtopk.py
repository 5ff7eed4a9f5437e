"""gTop-k (Shi et al., ICDCS 2019): recursive doubling in which each merge of two k-sparse vectors
is cut back to its k largest magnitudes, so messages stay at k pairs. Any p (MPICH's fold).
lg p·(α + k·w·β) + fold. Approximate: the result is k-sparse and differs from the sum of the
sparsified inputs wherever a contribution was cut on the way (docs/sparse.md)."""

from __future__ import annotations

from fabricprobe.collectives import sparse_state as st
from fabricprobe.collectives.base import Algorithm, register
from fabricprobe.collectives.sparse_recursive import recursive_exchange


def sparse_gtopk(comm, sendbuf, recvbuf, op="sum", root=0) -> None:
    st.begin()
    state = st.from_pairs(sendbuf.idx, sendbuf.val, 0, sendbuf.n)
    st.store(recursive_exchange(comm, state, reselect=sendbuf.nnz, switch=False), recvbuf)


ALGORITHM = register(Algorithm("gtopk", "sparse_allreduce",
                               "gTop-k: recursive doubling, re-selecting the k largest at each step (approximate)",
                               run=sparse_gtopk, semantics="gtopk"))
