"""Run under NUMBA_ENABLE_CUDASIM=1 (or on a GPU): the Numba-CUDA kernels, reached through the
kernel dispatch with numba device arrays, against the CPU kernels. Prints one JSON line."""

from __future__ import annotations

import json
import sys

import numpy as np
from numba import cuda

from fabricprobe import kernels


def main() -> int:
    rng = np.random.default_rng(5)
    failures, checked = [], 0
    backend = None
    for dtype in (np.float32, np.float64, np.int32):
        for n in (0, 1, 7, 40):
            a = (rng.normal(size=n) * 10).astype(dtype)
            b = (rng.normal(size=n) * 10).astype(dtype)
            for op in ("sum", "max", "min", "prod"):
                want = a.copy()
                kernels.reduce_into(want, b, op)
                d = cuda.to_device(a)
                kernels.reduce_into(d, cuda.to_device(b), op)
                backend = kernels.backend_for(d).name
                checked += 1
                if not np.array_equal(d.copy_to_host(), want):
                    failures.append(f"reduce_into {op} {np.dtype(dtype)} n={n}")
            values = np.round(a / 4).astype(dtype)  # many ties
            for k in (0, 1, 5, n + 3):
                want_idx = np.empty(max(k, 1), np.int64)
                m_cpu = kernels.topk_indices(values, k, want_idx)
                got_idx = np.empty(max(k, 1), np.int64)
                m_gpu = kernels.topk_indices(cuda.to_device(values), k, got_idx)
                checked += 1
                if m_cpu != m_gpu or not np.array_equal(want_idx[:m_cpu], got_idx[:m_gpu]):
                    failures.append(f"topk {np.dtype(dtype)} n={n} k={k}: {got_idx[:m_gpu]} vs {want_idx[:m_cpu]}")
    dense = np.zeros(50, np.float32)
    idx = np.array([3, 7, 7, 49], np.int32)
    val = np.array([1.5, 2.0, 0.5, -1.0], np.float32)
    d = cuda.to_device(dense)
    kernels.scatter_add(d, cuda.to_device(idx), cuda.to_device(val))
    kernels.scatter_add(dense, idx, val)
    checked += 1
    if not np.array_equal(d.copy_to_host(), dense):
        failures.append("scatter_add")
    gathered = cuda.device_array(4, np.float32)
    kernels.pack(cuda.to_device(np.arange(50, dtype=np.float32) * 1.5), cuda.to_device(idx), gathered)
    checked += 1
    if gathered.copy_to_host().tolist() != [4.5, 10.5, 10.5, 73.5]:
        failures.append("pack")
    ia, va = np.array([1, 4, 9], np.int32), np.array([1, 2, 3], np.float32)
    ib, vb = np.array([4, 5], np.int32), np.array([10, 20], np.float32)
    oi, ov = cuda.device_array(5, np.int32), cuda.device_array(5, np.float32)
    m = kernels.merge_sum(cuda.to_device(ia), cuda.to_device(va), cuda.to_device(ib), cuda.to_device(vb), oi, ov)
    checked += 1
    if m != 4 or oi.copy_to_host()[:m].tolist() != [1, 4, 5, 9] or ov.copy_to_host()[:m].tolist() != [1, 12, 20, 3]:
        failures.append("merge_sum")
    print(
        json.dumps(
            {
                "backend": backend,
                "checked": checked,
                "failures": failures,
                "simulator": bool(cuda.simulator_available if hasattr(cuda, "simulator_available") else 0),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
