"""Top-k selection alone: fabricprobe's Numba radix select against numpy.argpartition, on the
gradient the sparse tests select from (fabricprobe.oracle.sparse_reference.gradient), interleaved.

    python benchmarks/topk_select.py [--n 4194304] [--density 0.01] [--reps 7]

Prints the median and range of each over the repetitions (milliseconds).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fabricprobe import kernels
from fabricprobe.oracle import sparse_reference


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 22)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    x = sparse_reference.gradient(0, args.n, np.dtype(np.float32))
    k = max(1, int(args.density * args.n))
    out = np.empty(k, np.int64)
    kernels.topk_indices(x, k, out)  # compile
    times: dict[str, list[float]] = {"numba": [], "argpartition": []}
    for _ in range(args.reps):
        t = time.perf_counter()
        kernels.topk_indices(x, k, out)
        times["numba"].append(time.perf_counter() - t)
        t = time.perf_counter()
        np.argpartition(np.abs(x), args.n - k)
        times["argpartition"].append(time.perf_counter() - t)
    for name, ts in times.items():
        ms = np.array(ts) * 1e3
        print(f"{name}: median {np.median(ms):.2f} ms (range {ms.min():.2f}-{ms.max():.2f}, {args.reps} reps)")


if __name__ == "__main__":
    main()
