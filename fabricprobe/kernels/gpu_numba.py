"""Numba-CUDA kernels for Numba device arrays: elementwise reductions, scatter-add, pack (gather), and a top-k by
bisection on the magnitudes' bit patterns (for non-negative floats the bit pattern orders like the
value, so the k-th largest magnitude is found with ~width counting passes, no sort). Tested on
machines without a GPU under Numba's simulator (NUMBA_ENABLE_CUDASIM=1). The merge of two sorted
sparse vectors runs on the host (a device merge-path kernel is future work)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numba import cuda

from fabricprobe.kernels import cpu, sparse_cpu
from fabricprobe.memory import on_device

# The simulator runs every thread as a Python thread: a small grid (the loops are grid-stride) keeps
# the tests fast without changing what the kernels compute.
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
THREADS = 8 if SIMULATED else 256
MAX_BLOCKS = 2 if SIMULATED else 4096


def _blocks(n: int) -> int:
    return max(1, min(MAX_BLOCKS, (n + THREADS - 1) // THREADS))


@cuda.jit
def _reduce_pair(out, a, b, opcode):  # pragma: no cover - device code
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < out.size:
        x, y = a[i], b[i]
        if opcode == 0:
            out[i] = x + y
        elif opcode == 1:
            out[i] = x if x > y else y
        elif opcode == 2:
            out[i] = x if x < y else y
        else:
            out[i] = x * y
        i += stride


@cuda.jit
def _scatter_add(dense, idx, val):  # pragma: no cover - device code
    j = cuda.grid(1)
    if j < idx.size:
        cuda.atomic.add(dense, idx[j], val[j])


@cuda.jit
def _pack(dense, idx, out):  # pragma: no cover - device code
    j = cuda.grid(1)
    stride = cuda.gridsize(1)
    while j < idx.size:
        out[j] = dense[idx[j]]
        j += stride


@cuda.jit
def _keys(values, mask, is_int, keys):  # pragma: no cover - device code
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < values.size:
        v = values[i]
        if is_int:
            keys[i] = v if v >= 0 else -v
        else:
            keys[i] = v & mask  # the raw bits of a float with the sign bit cleared
        i += stride


@cuda.jit
def _count_ge(keys, t, counter):  # pragma: no cover - device code
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    c = 0
    while i < keys.size:
        if keys[i] >= t:
            c += 1
        i += stride
    cuda.atomic.add(counter, 0, c)


@cuda.jit
def _flags(keys, t, flags):  # pragma: no cover - device code
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < keys.size:
        flags[i] = 1 if keys[i] > t else (2 if keys[i] == t else 0)
        i += stride


def reduce_into(dst: Any, src: Any, opcode: int) -> None:
    _reduce_pair[_blocks(dst.size), THREADS](dst, dst, src, opcode)


def reduce_pair(out: Any, a: Any, b: Any, opcode: int) -> None:
    _reduce_pair[_blocks(out.size), THREADS](out, a, b, opcode)


def scatter_add(dense: Any, idx: Any, val: Any) -> None:
    idx = idx if on_device(idx) else cuda.to_device(np.ascontiguousarray(idx))
    val = val if on_device(val) else cuda.to_device(np.ascontiguousarray(val))
    _scatter_add[max(1, (idx.size + THREADS - 1) // THREADS), THREADS](dense, idx, val)


def pack(dense: Any, idx: Any, out: Any) -> None:
    idx = idx if on_device(idx) else cuda.to_device(np.ascontiguousarray(idx))
    _pack[_blocks(idx.size), THREADS](dense, idx, out)


def _count(keys: Any, t: int) -> int:
    counter = cuda.to_device(np.zeros(1, np.int64))
    _count_ge[_blocks(keys.size), THREADS](keys, np.uint64(t), counter)
    return int(counter.copy_to_host()[0])


def topk_indices(values: Any, k: int, out_idx: Any) -> int:
    n = values.size
    k = max(0, min(k, n, out_idx.size))
    if k == 0:
        return 0
    dtype = np.dtype(values.dtype)
    width = dtype.itemsize * 8
    keys = cuda.device_array(n, np.uint64)
    if dtype.kind == "f":
        raw = values.view(np.dtype(f"u{dtype.itemsize}"))
        _keys[_blocks(n), THREADS](raw, np.uint64((1 << (width - 1)) - 1), False, keys)
    else:
        _keys[_blocks(n), THREADS](values, np.uint64(0), True, keys)
    lo, hi = 0, (1 << width) - 1  # the largest t with count(keys >= t) >= k lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _count(keys, mid) >= k:
            lo = mid
        else:
            hi = mid - 1
    flags = cuda.device_array(n, np.int8)
    _flags[_blocks(n), THREADS](keys, np.uint64(lo), flags)
    host = flags.copy_to_host()
    above = np.flatnonzero(host == 1)
    ties = np.flatnonzero(host == 2)[: k - above.size]  # ties: the lowest indices
    chosen = np.sort(np.concatenate([above, ties])).astype(np.dtype(out_idx.dtype))
    if on_device(out_idx):
        out_idx[:k] = cuda.to_device(chosen)
    else:
        out_idx[:k] = chosen
    return int(k)


def merge_sum(ia: Any, va: Any, ib: Any, vb: Any, out_i: Any, out_v: Any) -> int:
    host = [a.copy_to_host() if on_device(a) else np.asarray(a) for a in (ia, va, ib, vb)]
    oi = np.empty(host[0].size + host[2].size, np.dtype(out_i.dtype))
    ov = np.empty(oi.size, np.dtype(out_v.dtype))
    m = sparse_cpu.merge_sum(host[0], host[1], host[2], host[3], oi, ov)
    for dst, src in ((out_i, oi[:m]), (out_v, ov[:m])):
        if on_device(dst):
            dst[:m] = cuda.to_device(src)
        else:
            dst[:m] = src
    return int(m)


def backend():
    from fabricprobe.kernels import Backend

    assert cpu.SUM == 0 and cpu.MAX == 1 and cpu.MIN == 2 and cpu.PROD == 3  # the device code's opcodes
    return Backend("numba-cuda", reduce_into, reduce_pair, topk_indices, merge_sum, scatter_add, pack)
