"""Compute kernels behind one dispatch: the array's type picks the implementation.

    reduce_into(dst, src, op)   dst = dst (op) src, elementwise
    reduce_pair(out, a, b, op)  out = a (op) b
    topk_indices(values, k, out)   indices of the k largest |values|, ascending (ties: lowest index)
    merge_sum(ia, va, ib, vb, oi, ov)   union of two index-sorted sparse vectors, equal indices summed
    scatter_add(dense, idx, val)   dense[idx] += val
    pack(dense, idx, out)   out = dense[idx] (the gather that puts selected values beside their indices)

numpy arrays run Numba CPU kernels (kernels/cpu.py), loaded on the first call: a process that never
reduces (a report, a tuning probe) never imports Numba, a third of fabricprobe's start-up. Device
arrays register their own backend with `register_backend` (the GPU kernels do), so every hand-written
collective runs on whatever buffers it is given without knowing where they live.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fabricprobe.kernels.opcodes import OPCODES


class Backend:
    """The kernels for one kind of array."""

    def __init__(
        self,
        name: str,
        reduce_into: Callable,
        reduce_pair: Callable,
        topk_indices: Callable,
        merge_sum: Callable,
        scatter_add: Callable,
        pack: Callable,
    ) -> None:
        self.name = name
        self.reduce_into = reduce_into
        self.reduce_pair = reduce_pair
        self.topk_indices = topk_indices
        self.merge_sum = merge_sum
        self.scatter_add = scatter_add
        self.pack = pack


_BACKENDS: dict[str, Backend] = {}  # array type's module prefix -> backend
_CPU: list[Backend] = []  # the Numba CPU backend, once loaded


def cpu_backend() -> Backend:
    """The kernels for numpy arrays, compiled (or loaded from Numba's cache) on first use."""
    if not _CPU:
        from fabricprobe.kernels import cpu, sparse_cpu

        _CPU.append(
            Backend(
                "numba-cpu",
                cpu.reduce_into,
                cpu.reduce_pair,
                sparse_cpu.topk_indices,
                sparse_cpu.merge_sum,
                sparse_cpu.scatter_add,
                sparse_cpu.pack,
            )
        )
    return _CPU[0]


def register_backend(module_prefix: str, backend: Backend) -> None:
    _BACKENDS[module_prefix] = backend


def _register_gpu(module: str) -> None:
    """Device kernels load on first use, so numpy-only runs never import CuPy or numba.cuda."""
    if module.startswith("cupy") and "cupy" not in _BACKENDS:
        import cupy

        from fabricprobe.kernels.gpu_xp import make_backend

        register_backend("cupy", make_backend(cupy))
    elif module.startswith("numba.cuda") and "numba.cuda" not in _BACKENDS:
        from fabricprobe.kernels import gpu_numba

        register_backend("numba.cuda", gpu_numba.backend())


def backend_for(arr: Any) -> Backend:
    if isinstance(arr, np.ndarray):
        return cpu_backend()
    module = type(arr).__module__
    _register_gpu(module)
    for prefix, backend in _BACKENDS.items():
        if module.startswith(prefix):
            return backend
    raise TypeError(f"no kernels for arrays of type {type(arr).__module__}.{type(arr).__name__}")


def _check(dst: Any, src: Any) -> None:
    if dst.shape != src.shape or dst.dtype != src.dtype:
        raise ValueError(f"kernel operands differ: {dst.dtype}{dst.shape} and {src.dtype}{src.shape}")


def reduce_into(dst: Any, src: Any, op: str) -> None:
    """dst = dst (op) src, elementwise, in the array's own memory (host or device)."""
    _check(dst, src)
    if dst.size:
        backend_for(dst).reduce_into(dst, src, OPCODES[op])


def reduce_pair(out: Any, a: Any, b: Any, op: str) -> None:
    """out = a (op) b, elementwise."""
    _check(out, a)
    _check(out, b)
    if out.size:
        backend_for(out).reduce_pair(out, a, b, OPCODES[op])


def topk_indices(values: Any, k: int, out_idx: Any) -> int:
    """Indices of the k largest |values| (ties: lowest index first), ascending, into out_idx; returns k."""
    return backend_for(values).topk_indices(values, k, out_idx)


def merge_sum(ia: Any, va: Any, ib: Any, vb: Any, out_i: Any, out_v: Any) -> int:
    """Union of two index-sorted sparse vectors into out, equal indices summed; returns its length."""
    return backend_for(va).merge_sum(ia, va, ib, vb, out_i, out_v)


def scatter_add(dense: Any, idx: Any, val: Any) -> None:
    """dense[idx[j]] += val[j] for every pair (repeated indices all add)."""
    if idx.size:
        backend_for(dense).scatter_add(dense, idx, val)


def pack(dense: Any, idx: Any, out: Any) -> None:
    """out[j] = dense[idx[j]] for every j (out has idx.size elements)."""
    if idx.size:
        backend_for(dense).pack(dense, idx, out)
