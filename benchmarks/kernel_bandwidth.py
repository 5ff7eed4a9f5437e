"""The reduction kernel against a plain copy, timed interleaved, the ratio taken per repetition.

    python benchmarks/kernel_bandwidth.py [--sizes 64K,4M,64M,256M] [--reps 15]

Each repetition times, back to back and in an order that alternates between repetitions, numpy's copy
(np.copyto), the Numba kernel `dst = dst (op) src` for each op, and numpy's own ufunc; each timing is
the best of a few calls. The kernel's speedup over the copy (copy time / kernel time, above 1: the
kernel is faster; the reports' convention) is computed within each repetition, so a slow phase of the
machine (3× here, for seconds) hits both; the table gives the median and the range of those
per-repetition ratios, never one ratio from different moments.

Bytes are counted as each operation really moves them: the kernel reads dst and src and writes dst
(3 × S); the copy reads src, and its destination's cache lines are read before they are written
(write-allocate), then written (3 × S). So equal bandwidth means equal time. (Counting the copy as
2 × S, as this script once did, made a kernel that takes the copy's time look 1.5× faster.)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from fabricprobe import kernels
from fabricprobe.memory.host import aligned_empty
from fabricprobe.sizes import format_size, size_list

UFUNC = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}
BYTES_MOVED = 3  # × S, for the kernel and the copy alike (see the docstring)


def best_of(fn, calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64K,4M,64M,256M")
    parser.add_argument("--reps", type=int, default=15, help="interleaved repetitions per cell")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--ops", default="sum,max")
    args = parser.parse_args()
    print(
        "| size | dtype | op | kernel GB/s | copy GB/s | kernel speedup over copy: median (range) | numpy ufunc GB/s |"
    )
    print("|---|---|---|---|---|---|---|")
    for nbytes in size_list(args.sizes):
        for dtname in args.dtypes.split(","):
            n = nbytes // np.dtype(dtname).itemsize
            dst, src, out = (aligned_empty(n, dtname) for _ in range(3))
            src[:] = 1
            dst[:] = 1
            out[:] = 0
            calls = max(2, min(10, int(2e9 // max(nbytes, 1) // 64)))
            ops = args.ops.split(",")
            tasks = {"copy": lambda out=out, src=src: np.copyto(out, src)}
            for op in ops:
                tasks[f"kernel {op}"] = lambda op=op, dst=dst, src=src: kernels.reduce_into(dst, src, op)
                tasks[f"ufunc {op}"] = lambda op=op, dst=dst, src=src: UFUNC[op](dst, src, out=dst)
            for fn in tasks.values():  # compile and fault the pages in
                fn()
            times: dict[str, list[float]] = {name: [] for name in tasks}
            names = list(tasks)
            for rep in range(args.reps):
                for name in names if rep % 2 == 0 else reversed(names):
                    times[name].append(best_of(tasks[name], calls))
            copy = times["copy"]
            copy_bw = BYTES_MOVED * nbytes / min(copy) / 1e9
            for op in ops:
                kernel, ufunc = times[f"kernel {op}"], times[f"ufunc {op}"]
                ratios = [c / k for k, c in zip(kernel, copy)]  # speedup: copy time / kernel time
                print(
                    f"| {format_size(nbytes)} | {dtname} | {op} | {BYTES_MOVED * nbytes / min(kernel) / 1e9:.1f} | "
                    f"{copy_bw:.1f} | {statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
                    f"{BYTES_MOVED * nbytes / min(ufunc) / 1e9:.1f} |"
                )


if __name__ == "__main__":
    main()
