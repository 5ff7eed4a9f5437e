"""Numba kernels for numpy (host) arrays. One rank runs on one core, so the kernels are serial;
they are written so LLVM vectorises them, and they hold no GIL."""

from __future__ import annotations

import numpy as np
from numba import njit

from fabricprobe.kernels.opcodes import MAX, MIN, PROD, SUM  # noqa: F401  (cpu.SUM, ... for the GPU kernels)

# One small function per op, each compiled on its own: in one function with the other ops' loops,
# LLVM left `max` scalar (4.5× slower than sum at 4 MiB of float32, benchmarks/kernel_bandwidth.py),
# and a conditional store (`if a > dst[i]: dst[i] = a`) or a select is not vectorised at all here.
# numpy's maximum/minimum, compiled by Numba, vectorise; they are elementwise, so aliasing is fine.


@njit(cache=True, nogil=True)
def _sum_into(dst, src):  # pragma: no cover - compiled
    for i in range(dst.size):
        dst[i] += src[i]


@njit(cache=True, nogil=True)
def _prod_into(dst, src):  # pragma: no cover - compiled
    for i in range(dst.size):
        dst[i] *= src[i]


@njit(cache=True, nogil=True)
def _max_into(dst, src):  # pragma: no cover - compiled
    np.maximum(dst, src, dst)


@njit(cache=True, nogil=True)
def _min_into(dst, src):  # pragma: no cover - compiled
    np.minimum(dst, src, dst)


@njit(cache=True, nogil=True)
def reduce_into(dst, src, op):  # pragma: no cover - compiled
    """dst[i] = dst[i] (op) src[i] for every i."""
    if op == SUM:
        _sum_into(dst, src)
    elif op == MAX:
        _max_into(dst, src)
    elif op == MIN:
        _min_into(dst, src)
    else:
        _prod_into(dst, src)


@njit(cache=True, nogil=True)
def _sum_pair(out, a, b):  # pragma: no cover - compiled
    for i in range(out.size):
        out[i] = a[i] + b[i]


@njit(cache=True, nogil=True)
def _prod_pair(out, a, b):  # pragma: no cover - compiled
    for i in range(out.size):
        out[i] = a[i] * b[i]


@njit(cache=True, nogil=True)
def _max_pair(out, a, b):  # pragma: no cover - compiled
    np.maximum(a, b, out)


@njit(cache=True, nogil=True)
def _min_pair(out, a, b):  # pragma: no cover - compiled
    np.minimum(a, b, out)


@njit(cache=True, nogil=True)
def reduce_pair(out, a, b, op):  # pragma: no cover - compiled
    """out[i] = a[i] (op) b[i]: one pass instead of copy-then-reduce."""
    if op == SUM:
        _sum_pair(out, a, b)
    elif op == MAX:
        _max_pair(out, a, b)
    elif op == MIN:
        _min_pair(out, a, b)
    else:
        _prod_pair(out, a, b)
