"""Numba kernels for sparse vectors on the host: top-k selection by magnitude, merging of sorted
sparse vectors, scatter-add.

Top-k is a radix select on the magnitudes' bit patterns (for non-negative IEEE floats, and for
integer magnitudes, bit order is value order): one histogram pass per 16-bit digit narrows the
threshold key; a last pass collects, in index order, every element above the threshold and the
lowest-indexed ones equal to it. No sort of the whole array, exactly k results, indices
ascending, ties broken by the lowest index — the same answer on every rank and every run.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_DIGIT = 16  # bits of the first histogram for large inputs; small ones use 8 (a 65,536-bucket
_SMALL_DIGIT = 8  # histogram would cost more to clear and scan than the data)
_SMALL = 1 << 12
_FEW = 1024  # boundary candidates left to a sort


@njit(cache=True, nogil=True, inline="always")
def _key(raw, signed_int, sign_mask):  # pragma: no cover - compiled
    """Order-preserving unsigned key of |x| from x's raw bits (floats) or value (signed ints)."""
    if signed_int:
        v = np.int64(raw)  # int32's minimum negates exactly in int64; int64's wraps to 2**63, still the largest
        return np.uint64(-v) if v < 0 else np.uint64(v)
    return np.uint64(raw) & sign_mask


@njit(cache=True, nogil=True)
def _merge_sorted(a, b):  # pragma: no cover - compiled
    out = np.empty(a.size + b.size, dtype=np.int64)
    i = j = m = 0
    while i < a.size or j < b.size:
        if j >= b.size or (i < a.size and a[i] < b[j]):
            out[m] = a[i]
            i += 1
        else:
            out[m] = b[j]
            j += 1
        m += 1
    return out


@njit(cache=True, nogil=True)
def _boundary(hist, need):  # pragma: no cover - compiled
    """(the bucket holding the need-th largest key counting from the top, the keys above it)."""
    above = 0
    d = hist.size - 1
    while d > 0 and above + hist[d] < need:
        above += hist[d]
        d -= 1
    return d, above


@njit(cache=True, nogil=True)
def topk_raw(raw, width, signed_int, sign_mask, k, out_idx):  # pragma: no cover - compiled
    """Indices of the k largest magnitudes (ties: lowest index first), ascending, in out_idx.

    raw is the value array itself (signed ints) or its unsigned bit view (floats, whose sign bit
    sign_mask clears). Two passes over the data: a histogram of the top key bits, then one pass
    collecting, in index order, the elements certainly in and the candidates of the boundary
    bucket. While the candidates are many, the next 16 bits of their keys split them again; the
    last few are ordered by (key, index) and the ordered lists merged.
    """
    n = raw.size
    if k <= 0:
        return 0
    if k >= n:
        for i in range(n):
            out_idx[i] = i
        return n
    digit = _DIGIT if n >= _SMALL else _SMALL_DIGIT
    shift = width - digit
    hist = np.zeros(1 << digit, dtype=np.int64)
    for i in range(n):
        hist[_key(raw[i], signed_int, sign_mask) >> np.uint64(shift)] += 1
    d, above = _boundary(hist, k)
    sure = np.empty(above, dtype=np.int64)
    cand = np.empty(hist[d], dtype=np.int64)
    cand_keys = np.empty(hist[d], dtype=np.uint64)
    ns = nc = 0
    for i in range(n):
        key = _key(raw[i], signed_int, sign_mask)
        top = key >> np.uint64(shift)
        if top > d:
            sure[ns] = i
            ns += 1
        elif top == d:
            cand[nc] = i
            cand_keys[nc] = key
            nc += 1
    need = k - above
    while nc > _FEW and shift > 0:
        lower = max(shift - _DIGIT, 0)
        bits = shift - lower
        mask = np.uint64((1 << bits) - 1)
        hist2 = np.zeros(1 << bits, dtype=np.int64)
        for j in range(nc):
            hist2[(cand_keys[j] >> np.uint64(lower)) & mask] += 1
        d2, above2 = _boundary(hist2, need)
        more = np.empty(above2, dtype=np.int64)
        keep = np.empty(hist2[d2], dtype=np.int64)
        keep_keys = np.empty(hist2[d2], dtype=np.uint64)
        a = b = 0
        for j in range(nc):
            dig = (cand_keys[j] >> np.uint64(lower)) & mask
            if dig > d2:
                more[a] = cand[j]
                a += 1
            elif dig == d2:
                keep[b] = cand[j]
                keep_keys[b] = cand_keys[j]
                b += 1
        sure = _merge_sorted(sure, more)
        cand, cand_keys, nc = keep, keep_keys, b
        need -= above2
        shift = lower
    if shift == 0:  # every key bit used: the candidates are all equal, lowest indices first
        chosen = cand[:need]
    else:  # the few left: the `need` largest keys, lowest index first on ties (cand is in index order)
        order = np.argsort(-cand_keys.astype(np.float64), kind="mergesort")
        chosen = np.sort(cand[order[:need]])
    merged = _merge_sorted(sure, chosen)
    for m in range(merged.size):
        out_idx[m] = merged[m]
    return merged.size


_RAW = {"f4": (np.uint32, 32, False), "f8": (np.uint64, 64, False), "i4": (None, 32, True), "i8": (None, 64, True)}


def topk_indices(values: np.ndarray, k: int, out_idx: np.ndarray) -> int:
    """Indices of the k largest |values| (ties: lowest index first), ascending, into out_idx."""
    view, width, signed_int = _RAW[values.dtype.str[1:]]
    sign_mask = np.uint64((1 << (width - 1)) - 1)
    return topk_raw(values.view(view) if view is not None else values, width, signed_int, sign_mask, k, out_idx)


@njit(cache=True, nogil=True)
def gather(values, idx, out):  # pragma: no cover - compiled
    for j in range(idx.size):
        out[j] = values[idx[j]]


@njit(cache=True, nogil=True)
def merge_sum(ia, va, ib, vb, out_i, out_v):  # pragma: no cover - compiled
    """Union of two index-sorted sparse vectors, summing equal indices; returns the length."""
    i = j = m = 0
    na, nb = ia.size, ib.size
    while i < na and j < nb:
        a, b = ia[i], ib[j]
        if a < b:
            out_i[m] = a
            out_v[m] = va[i]
            i += 1
        elif b < a:
            out_i[m] = b
            out_v[m] = vb[j]
            j += 1
        else:
            out_i[m] = a
            out_v[m] = va[i] + vb[j]
            i += 1
            j += 1
        m += 1
    while i < na:
        out_i[m] = ia[i]
        out_v[m] = va[i]
        i += 1
        m += 1
    while j < nb:
        out_i[m] = ib[j]
        out_v[m] = vb[j]
        j += 1
        m += 1
    return m


@njit(cache=True, nogil=True)
def scatter_add(dense, idx, val):  # pragma: no cover - compiled
    """dense[idx[j]] += val[j] (indices may repeat: every pair is added)."""
    for j in range(idx.size):
        dense[idx[j]] += val[j]


@njit(cache=True, nogil=True)
def pack(dense, idx, out):  # pragma: no cover - compiled
    """out[j] = dense[idx[j]]: the selected values, gathered next to their indices for the wire."""
    for j in range(idx.size):
        out[j] = dense[idx[j]]
