"""Kernels for CuPy arrays, written against the array module `xp` (cupy on a GPU; numpy stands in
for it in the tests, so the CuPy path is checked on machines without one). Semantics are the CPU
kernels': top-k by magnitude with ties to the lowest index, indices ascending; merges sum equal
indices."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from fabricprobe.kernels import cpu

_UFUNC = {cpu.SUM: "add", cpu.MAX: "maximum", cpu.MIN: "minimum", cpu.PROD: "multiply"}


def _scatter_add(xp: ModuleType):
    if xp.__name__ == "numpy":
        return lambda dense, idx, val: xp.add.at(dense, idx, val)
    import cupyx  # cupy's unbuffered scatter-add (np.add.at's counterpart)

    return lambda dense, idx, val: cupyx.scatter_add(dense, idx, val)


def make_backend(xp: ModuleType):
    from fabricprobe.kernels import Backend

    scatter = _scatter_add(xp)

    def reduce_into(dst: Any, src: Any, opcode: int) -> None:
        getattr(xp, _UFUNC[opcode])(dst, src, out=dst)

    def reduce_pair(out: Any, a: Any, b: Any, opcode: int) -> None:
        getattr(xp, _UFUNC[opcode])(a, b, out=out)

    def topk_indices(values: Any, k: int, out_idx: Any) -> int:
        n = values.size
        k = max(0, min(k, n, out_idx.size))
        if k == 0:
            return 0
        # A stable sort of the negated magnitudes keeps equal magnitudes in index order.
        order = xp.argsort(-xp.abs(values.astype(xp.float64) if values.dtype.kind in "iu" else values), kind="stable")
        chosen = xp.sort(order[:k])
        out_idx[:k] = chosen.astype(out_idx.dtype) if hasattr(out_idx, "dtype") else chosen
        return int(k)

    def merge_sum(ia: Any, va: Any, ib: Any, vb: Any, out_i: Any, out_v: Any) -> int:
        idx = xp.concatenate([ia, ib])
        uniq, inverse = xp.unique(idx, return_inverse=True)
        sums = xp.zeros(uniq.size, va.dtype)
        scatter(sums, inverse.reshape(-1), xp.concatenate([va, vb]))
        m = int(uniq.size)
        out_i[:m] = uniq.astype(out_i.dtype)
        out_v[:m] = sums
        return m

    def scatter_add(dense: Any, idx: Any, val: Any) -> None:
        scatter(dense, idx, val)

    def pack(dense: Any, idx: Any, out: Any) -> None:
        xp.take(dense, idx, out=out)

    return Backend(f"{xp.__name__}-xp", reduce_into, reduce_pair, topk_indices, merge_sum, scatter_add, pack)
