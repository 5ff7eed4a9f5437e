"""Numba kernels for numpy (host) arrays. One rank runs on one core, so the kernels are serial;
they are written so LLVM vectorises them, and they hold no GIL."""

from __future__ import annotations

from numba import njit

SUM, MAX, MIN, PROD = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def reduce_into(dst, src, op):  # pragma: no cover - compiled
    """dst[i] = dst[i] (op) src[i] for every i."""
    n = dst.size
    if op == SUM:
        for i in range(n):
            dst[i] += src[i]
    elif op == MAX:
        for i in range(n):
            a = src[i]
            if a > dst[i]:
                dst[i] = a
    elif op == MIN:
        for i in range(n):
            a = src[i]
            if a < dst[i]:
                dst[i] = a
    else:
        for i in range(n):
            dst[i] *= src[i]


@njit(cache=True, nogil=True)
def reduce_pair(out, a, b, op):  # pragma: no cover - compiled
    """out[i] = a[i] (op) b[i]: one pass instead of copy-then-reduce."""
    n = out.size
    if op == SUM:
        for i in range(n):
            out[i] = a[i] + b[i]
    elif op == MAX:
        for i in range(n):
            out[i] = a[i] if a[i] > b[i] else b[i]
    elif op == MIN:
        for i in range(n):
            out[i] = a[i] if a[i] < b[i] else b[i]
    else:
        for i in range(n):
            out[i] = a[i] * b[i]
