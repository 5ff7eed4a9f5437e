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


@njit(cache=True, nogil=True, inline="always")
def _key(raw, signed_int, sign_mask):  # pragma: no cover - compiled
    """Order-preserving unsigned key of |x| from x's raw bits (floats) or value (signed ints)."""
    if signed_int:
        v = np.int64(raw)  # int32's minimum negates exactly in int64; int64's wraps to 2**63, still the largest
        return np.uint64(-v) if v < 0 else np.uint64(v)
    return np.uint64(raw) & sign_mask


# The one histogram every selection on this process counts into (allocated once: a timed call must
# not allocate; docs/methodology.md). fabricprobe runs one thread per rank.
_HIST = np.zeros(1 << _DIGIT, dtype=np.int64)


@njit(cache=True, nogil=True)
def topk_raw(raw, width, signed_int, sign_mask, k, out_idx, hist):  # pragma: no cover - compiled
    """Radix select without any allocation: `hist` (1 << 16 counters) is the only workspace.

    raw is the value array itself (signed ints) or its unsigned bit view (floats, whose sign bit
    sign_mask clears). Each pass histograms the next digit of the keys that share the threshold's
    digits found so far and finds the digit holding the need-th largest key; it stops early when that
    digit's whole bucket is taken. A last pass writes, in index order, every key above the threshold
    prefix and, of the keys equal to it, the lowest-indexed ones still needed.
    """
    n = raw.size
    if k <= 0:
        return 0
    if k >= n:
        for i in range(n):
            out_idx[i] = i
        return n
    shift = width  # the digits above `shift` are decided: they equal `prefix`
    prefix = np.uint64(0)
    need = k
    whole = False
    digit = _DIGIT if n >= _SMALL else _SMALL_DIGIT
    while shift > 0:
        bits = min(digit, shift)
        lower = shift - bits
        mask = np.uint64((1 << bits) - 1)
        for b in range(1 << bits):
            hist[b] = 0
        for i in range(n):
            key = _key(raw[i], signed_int, sign_mask)
            if shift == width or (key >> np.uint64(shift)) == prefix:
                hist[(key >> np.uint64(lower)) & mask] += 1
        above = 0
        d = (1 << bits) - 1
        while d > 0 and above + hist[d] < need:
            above += hist[d]
            d -= 1
        need -= above
        prefix = (prefix << np.uint64(bits)) | np.uint64(d) if shift != width else np.uint64(d)
        shift = lower
        if hist[d] == need:  # the whole bucket is taken: no ties to order
            whole = True
            break
    m = 0
    for i in range(n):
        top = _key(raw[i], signed_int, sign_mask) >> np.uint64(shift)
        if top > prefix or (top == prefix and whole):
            out_idx[m] = i
            m += 1
        elif top == prefix and need > 0:  # ties at the full key: the lowest indices
            out_idx[m] = i
            m += 1
            need -= 1
    return m


def topk_indices(values: np.ndarray, k: int, out_idx: np.ndarray) -> int:
    """Indices of the k largest |values| (ties: lowest index first), ascending, into out_idx."""
    view, width, signed_int, sign_mask = _RAW[values.dtype.str[1:]]
    return topk_raw(values.view(view) if view is not None else values, width, signed_int, sign_mask, k, out_idx, _HIST)


_RAW = {  # value dtype -> (unsigned view, key width, signed integer, mask of the magnitude bits)
    f"{kind}{size}": (view, 8 * size, signed, np.uint64((1 << (8 * size - 1)) - 1))
    for kind, size, view, signed in (
        ("f", 4, np.uint32, False),
        ("f", 8, np.uint64, False),
        ("i", 4, None, True),
        ("i", 8, None, True),
    )
}


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
def scatter_add_offset(dense, idx, val, offset):  # pragma: no cover - compiled
    """dense[idx[j] - offset] += val[j]: a region's dense values from global indices, without the
    temporary array `idx - offset` would allocate."""
    for j in range(idx.size):
        dense[idx[j] - offset] += val[j]


@njit(cache=True, nogil=True)
def pack(dense, idx, out):  # pragma: no cover - compiled
    """out[j] = dense[idx[j]]: the selected values, gathered next to their indices for the wire."""
    for j in range(idx.size):
        out[j] = dense[idx[j]]
