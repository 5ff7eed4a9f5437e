"""Sparse kernels, wire format, reference semantics and error feedback (no MPI)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricprobe import kernels
from fabricprobe.collectives.blocks import sparse_state as st
from fabricprobe.oracle import sparse_reference
from fabricprobe.sparse.error_feedback import ErrorFeedback
from fabricprobe.sparse.vector import SparseResult, SparseVector, capacity, decode, encode_dense, encode_sparse, k_for

DTYPES = [np.float32, np.float64, np.int32, np.int64]


def sorted_topk(values: np.ndarray, k: int) -> np.ndarray:
    """The definition: largest magnitudes, lowest index first on ties, as a full sort would give."""
    mag = np.abs(values.astype(np.float64))
    return np.sort(np.lexsort((np.arange(values.size), -mag))[:k])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "n,k",
    [(1, 1), (10, 0), (10, 3), (1000, 1), (1000, 999), (1000, 1000), (70000, 700), (300000, 3000), (300000, 299999)],
)
def test_topk_matches_a_full_sort(dtype, n, k):
    rng = np.random.default_rng(n + k)
    for values in (
        rng.integers(-5, 6, n).astype(dtype),  # heavy ties and zeros
        (rng.standard_normal(n) * 1000).astype(dtype),
    ):
        out = np.empty(n, np.int64)
        m = kernels.topk_indices(values, k, out)
        assert m == k
        np.testing.assert_array_equal(out[:m], sorted_topk(values, k))


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_all_zero_and_extremes(dtype):
    out = np.empty(50, np.int64)
    assert kernels.topk_indices(np.zeros(50, dtype), 4, out) == 4 and list(out[:4]) == [0, 1, 2, 3]
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        v = np.array([3, info.min, 5, info.max], dtype)
        kernels.topk_indices(v, 2, out)
        assert list(out[:2]) == [1, 3]
    else:
        v = np.array([1.0, -np.inf, 2.0, -0.0], dtype)
        kernels.topk_indices(v, 1, out)
        assert out[0] == 1


def test_merge_and_scatter_add():
    ia, va = np.array([1, 4, 9], np.int32), np.array([1.0, 2.0, 3.0], np.float32)
    ib, vb = np.array([0, 4, 10], np.int32), np.array([5.0, -2.0, 1.0], np.float32)
    oi, ov = np.empty(6, np.int32), np.empty(6, np.float32)
    m = kernels.merge_sum(ia, va, ib, vb, oi, ov)
    assert list(oi[:m]) == [0, 1, 4, 9, 10] and list(ov[:m]) == [5.0, 1.0, 0.0, 3.0, 1.0]
    dense = np.zeros(5, np.float64)
    kernels.scatter_add(dense, np.array([1, 1, 3]), np.array([2.0, 3.0, 1.0]))
    assert list(dense) == [0, 5, 0, 1, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wire_format_round_trip(dtype):
    sv = SparseVector.top_k(sparse_reference.gradient(2, 1001, np.dtype(dtype)), 33)
    buf = np.zeros(capacity(1001, dtype, 33), np.uint8)
    nbytes = encode_sparse(sv.idx, sv.val, buf)
    idx, val = decode(buf[:nbytes], 1001, dtype)
    np.testing.assert_array_equal(idx, sv.idx)
    np.testing.assert_array_equal(val, sv.val)
    dense = sparse_reference.gradient(1, 1001, np.dtype(dtype))
    nbytes = encode_dense(dense, buf)
    idx, val = decode(buf[:nbytes], 1001, dtype)
    assert idx is None and np.array_equal(val, dense)


def test_states_merge_and_switch_to_dense():
    st.begin()
    a = st.from_pairs(np.array([0, 5], np.int32), np.array([1.0, 2.0]), 0, 8)
    b = st.from_pairs(np.array([5, 7], np.int32), np.array([3.0, 4.0]), 0, 8)
    m = st.merge(a, b)
    assert list(m.idx) == [0, 5, 7] and list(m.val) == [1.0, 5.0, 4.0]
    top = st.merge(a, b, reselect=2)
    assert list(top.idx) == [5, 7]
    assert not m.switch_if_full().is_dense  # 3 pairs of 12 B < 8 values of 8 B
    c = st.from_pairs(np.array([1, 2, 3], np.int32), np.array([1.0, 1.0, 1.0]), 0, 8)
    full = st.merge(m, c).switch_if_full()  # 6 pairs of 12 B >= 64 B dense
    assert full.is_dense and list(full.dense) == [1, 1, 1, 1, 0, 5, 0, 4]
    mixed = st.merge(full, a)
    assert list(mixed.dense) == [2, 1, 1, 1, 0, 7, 0, 4]


def test_reference_semantics():
    n, k, dtype = 64, 4, np.dtype(np.float64)
    exact = sparse_reference.exact_sum(3, n, dtype, k)
    brute = sum(SparseVector.top_k(sparse_reference.gradient(r, n, dtype), k).to_dense() for r in range(3))
    np.testing.assert_array_equal(exact, brute)
    g = sparse_reference.gtopk(3, n, dtype, k)
    assert np.count_nonzero(g) <= k
    # with k = n nothing is ever cut: gTop-k is the exact dense sum
    np.testing.assert_array_equal(sparse_reference.gtopk(5, n, dtype, n), sparse_reference.exact_sum(5, n, dtype, n))
    np.testing.assert_array_equal(
        sparse_reference.exact_sum(4, n, dtype, n), sum(sparse_reference.gradient(r, n, dtype) for r in range(4))
    )


def test_k_for_density():
    assert k_for(1000, 0.001) == 1 and k_for(1000, 1e-9) == 1
    assert k_for(1000, 1.0) == 1000 and k_for(0, 0.5) == 0


def test_error_feedback_loses_nothing():
    rng = np.random.default_rng(0)
    ef = ErrorFeedback(500, np.float64, density=0.02)
    sent_total = np.zeros(500)
    grads = [rng.standard_normal(500) for _ in range(20)]
    for g in grads:
        sv = ef.compress(g)
        assert sv.nnz == 10
        np.add.at(sent_total, sv.idx, sv.val)
    np.testing.assert_allclose(sent_total + ef.residual, np.sum(grads, axis=0), atol=1e-12)


def test_sparse_result():
    r = SparseResult(6, np.dtype(np.float32))
    assert np.isnan(r.to_dense()).all()  # unwritten results fail validation
    r.set_sparse(np.array([2], np.int32), np.array([3.0], np.float32))
    target = np.ones(6, np.float32)
    r.add_to(target, scale=0.5)
    assert list(target) == [1, 1, 2.5, 1, 1, 1] and r.nnz == 1
