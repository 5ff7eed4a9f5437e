"""What sparse allreduce results must be, computed independently of the algorithms and kernels: plain
numpy for the per-rank top-k (a lexicographic sort on magnitude, then index), the merges, the
re-selection and MPICH's fold, so a wrong selection kernel or a wrong fold cannot agree with itself.

Inputs are deterministic "gradients" of small integers in [−100, 100] with many equal magnitudes and
zeros, so every sum is exact and tie-breaking (lowest index first) is exercised all the time.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from fabricprobe.sparse.vector import SparseVector

Inputs = Callable[[int], np.ndarray]  # rank -> that rank's dense vector


def gradient(rank: int, n: int, dtype: np.dtype, salt: int = 0) -> np.ndarray:
    i = np.arange(n, dtype=np.int64)
    return (((i * 7919 + rank * 104729 + salt * 31) % 201) - 100).astype(dtype)


def top_k(dense: np.ndarray, k: int) -> SparseVector:
    """The k largest magnitudes of `dense` (ties: lowest index first), index-sorted, by a full sort."""
    k = min(max(k, 0), dense.size)
    order = np.lexsort((np.arange(dense.size), -np.abs(dense.astype(np.float64))))[:k]
    idx = np.sort(order)
    return SparseVector(dense.size, idx.astype(np.int32), dense[idx].copy())


def survivors(nranks: int) -> list[tuple[int, ...]]:
    """MPICH's fold for p not a power of two: the ranks each of the p' survivors carries (the first
    2r ranks pair up, the rest carry themselves), written out here rather than taken from the
    algorithms' own Fold."""
    pof2 = 1 << (nranks.bit_length() - 1)
    rem = nranks - pof2
    return [(2 * q, 2 * q + 1) if q < rem else (q + rem,) for q in range(pof2)]


def sparsified(rank: int, n: int, dtype: np.dtype, k: int) -> SparseVector:
    return top_k(gradient(rank, n, dtype), k)


def _default(n: int, dtype: np.dtype) -> Inputs:
    return lambda rank: gradient(rank, n, dtype)


def exact_sum(nranks: int, n: int, dtype: np.dtype, k: int, inputs: Inputs | None = None) -> np.ndarray:
    """Σ_r topk(g_r): what the exact variants must produce."""
    inputs = inputs or _default(n, dtype)
    total = np.zeros(n, dtype)
    for r in range(nranks):
        sv = top_k(inputs(r), k)
        np.add.at(total, sv.idx, sv.val)
    return total


def _select(idx: np.ndarray, val: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest magnitudes, lowest index first on ties, returned index-sorted."""
    if idx.size <= k:
        return idx, val
    order = np.lexsort((idx, -np.abs(val.astype(np.float64))))[:k]
    keep = np.sort(order)
    return idx[keep], val[keep]


def _merge(a: tuple, b: tuple, k: int) -> tuple[np.ndarray, np.ndarray]:
    idx = np.union1d(a[0], b[0])
    val = np.zeros(idx.size, a[1].dtype)
    np.add.at(val, np.searchsorted(idx, a[0]), a[1])
    np.add.at(val, np.searchsorted(idx, b[0]), b[1])
    return _select(idx, val, k)


def gtopk(nranks: int, n: int, dtype: np.dtype, k: int, inputs: Inputs | None = None) -> np.ndarray:
    """gTop-k's definition: MPICH's fold, then recursive doubling; every merge of two states keeps
    only the k largest magnitudes of their sum. All ranks end with the same k-sparse vector."""
    inputs = inputs or _default(n, dtype)
    states = {}
    for r in range(nranks):
        sv = top_k(inputs(r), k)
        states[r] = (sv.idx.astype(np.int64), sv.val)
    carried = survivors(nranks)
    folded = {}
    for newrank, ranks in enumerate(carried):
        state = states[ranks[-1]]
        if len(ranks) == 2:
            state = _merge(state, states[ranks[0]], k)
        folded[newrank] = state
    mask = 1
    while mask < len(carried):
        folded = {q: _merge(folded[q], folded[q ^ mask], k) for q in folded}
        mask <<= 1
    idx, val = folded[0]
    dense = np.zeros(n, dtype)
    dense[idx] = val
    return dense


def expected(semantics: str, nranks: int, n: int, dtype: np.dtype, k: int, inputs: Inputs | None = None) -> np.ndarray:
    if semantics == "gtopk":
        return gtopk(nranks, n, dtype, k, inputs)
    return exact_sum(nranks, n, dtype, k, inputs)
