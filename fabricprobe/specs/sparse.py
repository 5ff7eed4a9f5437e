"""Sparse allreduce (each rank contributes its k largest-magnitude entries, k = density × n) and the
local top-k selection that produces those pairs.

The pairs are selected outside the timed region: the sparse points time the communication and
summation of already-selected pairs, and topk_local times the selection on its own, so the two
can be read side by side. The result is sparse or dense (docs/sparse.md); validation densifies it
and compares with fabricprobe.oracle.sparse_reference for the algorithm's semantics.
"""

from __future__ import annotations

import numpy as np

from fabricprobe.memory.host import POOL, BufferPool
from fabricprobe.oracle import sparse_reference
from fabricprobe.sparse.vector import SparseResult, k_for
from fabricprobe.specs.base import Case, CollectiveSpec


class SparseAllreduce(CollectiveSpec):
    name = "sparse_allreduce"
    reduces = True
    sparse = True
    in_library = False  # MPI has no sparse allreduce
    compared_with = "allreduce"  # read against the library's dense allreduce of the same size
    in_place_supported = False
    busbw_formula = "2(n-1)/n, as for the dense allreduce it replaces"

    def busbw_factor(self, nranks: int) -> float:
        return 2.0 * (nranks - 1) / nranks

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        case.recv = SparseResult(case.count, case.dtype)

    def prepare(self, case: Case) -> None:
        if case.send is None:  # algorithms are bound to this object: made once per point
            k = k_for(case.count, case.density)
            case.send = sparse_reference.sparsified(case.rank, case.count, case.dtype, k)
        case.recv.soil()  # as a trainer's reused result: holding the last step's data, not zeros

    def untouched(self, case: Case) -> list[np.ndarray]:
        """The rank's selected pairs: the call's input, left as they are (as a send buffer is)."""
        return [] if case.send is None else [case.send.idx, case.send.val]

    def results(self, case: Case):
        k = k_for(case.count, case.density)
        want = sparse_reference.expected(case.semantics, case.nranks, case.count, case.dtype, k)
        return [(case.recv.to_dense(), want)]


class TopkLocal(CollectiveSpec):
    """Top-k selection of density × n entries by magnitude from one dense vector per rank."""

    name = "topk_local"
    local = True
    sparse = True
    in_library = False
    in_place_supported = False
    implementations = ("numba", "argpartition")
    busbw_formula = "1 (reads the vector once)"

    def allocate(self, case: Case, pool: BufferPool = POOL) -> None:
        case.send = pool.get("send", case.count, case.dtype, case.hugepages)
        case.recv = pool.get("topk", k_for(case.count, case.density), np.int64)

    def prepare(self, case: Case) -> None:
        case.send[:] = sparse_reference.gradient(case.rank, case.count, case.dtype)
        case.recv.fill(-1)

    def results(self, case: Case):
        """The selected magnitudes must be the k largest (which of equal magnitudes is free)."""
        k = case.recv.size
        chosen = case.recv
        if k and (chosen.min() < 0 or chosen.max() >= case.count or np.unique(chosen).size != k):
            return [(np.zeros(k), np.ones(k))]  # invalid, repeated or unwritten indices
        want = sparse_reference.top_k(case.send, k).val
        got = case.send[chosen] if k else want
        return [(np.sort(np.abs(got)), np.sort(np.abs(want)))]


SPARSE_ALLREDUCE = SparseAllreduce()
TOPK_LOCAL = TopkLocal()
