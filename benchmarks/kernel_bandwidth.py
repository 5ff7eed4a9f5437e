"""The reduction kernel against the machine's copy bandwidth.

    python benchmarks/kernel_bandwidth.py [--sizes 64K,1M,16M,256M] [--reps 30]

Bandwidth counts the bytes each operation must move: a reduction dst = dst (op) src reads two
arrays and writes one (3 × S), a copy reads one and writes one (2 × S). The ratio kernel / copy
says how close the kernel runs to the memory system's copy speed (target ≥ 80%). numpy's own
ufunc (np.add(dst, src, out=dst) etc.) is shown for reference. Best of --reps runs per cell.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fabricprobe import kernels
from fabricprobe.memory.host import aligned_empty
from fabricprobe.sizes import format_size, size_list

UFUNC = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def best(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64K,1M,16M,256M")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--ops", default="sum,max")
    args = parser.parse_args()
    print("| size | dtype | op | kernel GB/s | copy GB/s | kernel / copy | numpy ufunc GB/s |")
    print("|---|---|---|---|---|---|---|")
    for nbytes in size_list(args.sizes):
        for dtname in args.dtypes.split(","):
            n = nbytes // np.dtype(dtname).itemsize
            dst, src, out = (aligned_empty(n, dtname) for _ in range(3))
            src[:] = 1
            dst[:] = 1
            out[:] = 0
            reps = max(3, min(args.reps, int(2e9 // max(nbytes, 1))))
            t_copy = best(lambda out=out, src=src: np.copyto(out, src), reps)
            copy_bw = 2 * nbytes / t_copy / 1e9
            for op in args.ops.split(","):
                t_kernel = best(lambda dst=dst, src=src, op=op: kernels.reduce_into(dst, src, op), reps)
                t_numpy = best(lambda dst=dst, src=src, op=op: UFUNC[op](dst, src, out=dst), reps)
                kernel_bw, numpy_bw = 3 * nbytes / t_kernel / 1e9, 3 * nbytes / t_numpy / 1e9
                print(
                    f"| {format_size(nbytes)} | {dtname} | {op} | {kernel_bw:.1f} | {copy_bw:.1f} | "
                    f"{kernel_bw / copy_bw:.2f} | {numpy_bw:.1f} |"
                )


if __name__ == "__main__":
    main()
