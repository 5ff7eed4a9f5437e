"""Sparse vectors (index-sorted (index, value) pairs of a dense vector of length n), results that
may be sparse or dense, and the wire format they travel in.

Wire format, one message: int64 header (the number of pairs m, or −1 for a dense vector of n
values), then m int32 indices padded to 8 bytes, then the values (m of them, or n when dense).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricprobe import kernels

INDEX = np.dtype(np.int32)
_HEADER = 8
DENSE = -1


def k_for(n: int, density: float) -> int:
    """Pairs each rank keeps: round(density·n), at least 1 (when n > 0), at most n."""
    return 0 if n == 0 else int(min(n, max(1, round(density * n))))


@dataclass
class SparseVector:
    n: int  # dense length
    idx: np.ndarray  # int32, ascending, unique
    val: np.ndarray

    @property
    def nnz(self) -> int:
        return int(self.idx.size)

    def to_dense(self, out: np.ndarray | None = None) -> np.ndarray:
        dense = np.zeros(self.n, self.val.dtype) if out is None else out
        if out is not None:
            dense.fill(0)
        dense[self.idx] = self.val
        return dense

    @classmethod
    def top_k(cls, dense: np.ndarray, k: int) -> "SparseVector":
        """The k largest-magnitude entries of a dense vector (ties: lowest index first)."""
        idx = np.empty(min(max(k, 0), dense.size), dtype=np.int64)
        m = kernels.topk_indices(dense, idx.size, idx)
        chosen = idx[:m].astype(INDEX)
        values = np.empty(m, dense.dtype)
        kernels.pack(dense, chosen, values)
        return cls(dense.size, chosen, values)


@dataclass
class SparseResult:
    """What a sparse allreduce leaves on a rank: a sparse vector, or a dense one once it filled up.

    Its storage (n values dense, n pairs sparse) is allocated with it, before any timed call, and the
    algorithms write into it (`dense_buffer`, `sparse_buffers`): a result built afresh in every call
    costs page faults that grow with n exactly where the sparse-vs-dense crossover is measured."""

    n: int
    dtype: np.dtype
    sparse: SparseVector | None = None
    dense: np.ndarray | None = None

    def __post_init__(self) -> None:
        self._dense = np.zeros(self.n, self.dtype)
        self._idx = np.zeros(self.n, INDEX)
        self._val = np.zeros(self.n, self.dtype)

    def dense_buffer(self) -> np.ndarray:
        """The result's own n dense values (contents left from before), now the result."""
        self.sparse, self.dense = None, self._dense
        return self._dense

    def sparse_buffers(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """The result's own storage for m pairs (indices, values), now the result."""
        idx, val = self._idx[:m], self._val[:m]
        self.sparse, self.dense = SparseVector(self.n, idx, val), None
        return idx, val

    def set_sparse(self, idx: np.ndarray, val: np.ndarray) -> None:
        self.sparse, self.dense = SparseVector(self.n, idx, val), None

    def set_dense(self, dense: np.ndarray) -> None:
        self.sparse, self.dense = None, dense

    @property
    def nnz(self) -> int:
        if self.dense is not None:
            return int(np.count_nonzero(self.dense))
        return 0 if self.sparse is None else self.sparse.nnz

    def to_dense(self) -> np.ndarray:
        if self.dense is not None:
            return np.array(self.dense, copy=True)
        if self.sparse is None:
            return np.full(self.n, np.nan, self.dtype)  # nothing written: fails validation
        return self.sparse.to_dense()

    def add_to(self, target: np.ndarray, scale: float = 1.0) -> None:
        """target += scale × result (how a trainer applies a sparse gradient sum)."""
        if self.dense is not None:
            target += scale * self.dense if scale != 1.0 else self.dense
        elif self.sparse is not None:
            kernels.scatter_add(target, self.sparse.idx, self.sparse.val * scale if scale != 1.0 else self.sparse.val)

    def clear(self) -> None:
        self.sparse = self.dense = None

    def soil(self) -> None:
        """Leave the result as a previous call would, holding other data: a dense result of NaNs, and
        index and value storage of garbage. The trainers hand the same result object to every step
        (trainers/sparse_dp.py), so validation calls an algorithm on a soiled one: an algorithm that
        adds onto what the result held, right on a fresh (zeroed) result, fails there (issue 36's
        planted bug passed every test and sweep while validation used fresh results)."""
        self._dense.fill(np.nan)
        self._idx[:] = np.arange(self.n - 1, -1, -1, dtype=INDEX)  # valid indices, in no useful order
        self._val.fill(np.nan)
        self.sparse, self.dense = None, self._dense

    # the harness treats a case's recv as an array-like with a size
    @property
    def size(self) -> int:
        return self.n


def _padded(m: int) -> int:
    return (m * INDEX.itemsize + 7) // 8 * 8


def capacity(n: int, dtype: np.dtype, pairs: int) -> int:
    """Bytes a message may need: the larger of `pairs` pairs and a dense vector."""
    itemsize = np.dtype(dtype).itemsize
    return _HEADER + max(_padded(pairs) + pairs * itemsize, n * itemsize)


def encode_sparse(idx: np.ndarray, val: np.ndarray, out: np.ndarray) -> int:
    """Write pairs into the byte buffer out; returns the message length in bytes."""
    m = idx.size
    out[:_HEADER].view(np.int64)[0] = m
    start = _HEADER + _padded(m)
    out[_HEADER : _HEADER + m * INDEX.itemsize].view(INDEX)[:] = idx
    end = start + m * val.dtype.itemsize
    out[start:end].view(val.dtype)[:] = val
    return end


def encode_dense(dense: np.ndarray, out: np.ndarray) -> int:
    out[:_HEADER].view(np.int64)[0] = DENSE
    end = _HEADER + dense.nbytes
    out[_HEADER:end].view(dense.dtype)[:] = dense
    return end


def decode(buf: np.ndarray, n: int, dtype: np.dtype) -> tuple[np.ndarray | None, np.ndarray]:
    """(indices, values) of a sparse message, or (None, dense values); views into buf."""
    dtype = np.dtype(dtype)
    m = int(buf[:_HEADER].view(np.int64)[0])
    if m == DENSE:
        return None, buf[_HEADER : _HEADER + n * dtype.itemsize].view(dtype)
    start = _HEADER + _padded(m)
    idx = buf[_HEADER : _HEADER + m * INDEX.itemsize].view(INDEX)
    return idx, buf[start : start + m * dtype.itemsize].view(dtype)
