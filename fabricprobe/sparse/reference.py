"""What sparse allreduce results must be, computed independently of the algorithms (plain numpy
for merges and re-selection; only the per-rank top-k uses the selection kernel, which is tested
against a sort on its own).

Inputs are deterministic "gradients" of small integers in [−100, 100] with many equal magnitudes and
zeros, so every sum is exact and tie-breaking (lowest index first) is exercised all the time.
"""

from __future__ import annotations

import numpy as np

from typing import Callable

from fabricprobe.collectives.halving_doubling import Fold
from fabricprobe.sparse.vector import SparseVector

Inputs = Callable[[int], np.ndarray]  # rank -> that rank's dense vector


def gradient(rank: int, n: int, dtype: np.dtype, salt: int = 0) -> np.ndarray:
    i = np.arange(n, dtype=np.int64)
    return (((i * 7919 + rank * 104729 + salt * 31) % 201) - 100).astype(dtype)


def k_for(n: int, density: float) -> int:
    """Pairs each rank keeps: round(density·n), at least 1 (when n > 0), at most n."""
    return 0 if n == 0 else int(min(n, max(1, round(density * n))))


def sparsified(rank: int, n: int, dtype: np.dtype, k: int) -> SparseVector:
    return SparseVector.top_k(gradient(rank, n, dtype), k)


def _default(n: int, dtype: np.dtype) -> Inputs:
    return lambda rank: gradient(rank, n, dtype)


def exact_sum(nranks: int, n: int, dtype: np.dtype, k: int, inputs: Inputs | None = None) -> np.ndarray:
    """Σ_r topk(g_r): what the exact variants must produce."""
    inputs = inputs or _default(n, dtype)
    total = np.zeros(n, dtype)
    for r in range(nranks):
        sv = SparseVector.top_k(inputs(r), k)
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
        sv = SparseVector.top_k(inputs(r), k)
        states[r] = (sv.idx.astype(np.int64), sv.val)
    fold = Fold.of(0, nranks)
    survivors = {}
    for newrank in range(fold.pof2):
        ranks = fold.represented(newrank)
        state = states[ranks[-1]]
        if len(ranks) == 2:
            state = _merge(state, states[ranks[0]], k)
        survivors[newrank] = state
    mask = 1
    while mask < fold.pof2:
        survivors = {q: _merge(survivors[q], survivors[q ^ mask], k) for q in survivors}
        mask <<= 1
    idx, val = survivors[0]
    dense = np.zeros(n, dtype)
    dense[idx] = val
    return dense


def expected(semantics: str, nranks: int, n: int, dtype: np.dtype, k: int, inputs: Inputs | None = None) -> np.ndarray:
    if semantics == "gtopk":
        return gtopk(nranks, n, dtype, k, inputs)
    return exact_sum(nranks, n, dtype, k, inputs)
