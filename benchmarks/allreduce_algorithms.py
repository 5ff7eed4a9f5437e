"""Hand-written allreduce algorithms against the MPI library's, at large messages.

    python benchmarks/allreduce_algorithms.py [--ranks 2] [--reps 5] [--sizes 1M,4M,16M]
        [--algorithms ring,rabenseifner] [-- extra sweep options]

Runs `fabricprobe sweep` --reps times (each sweep measures every algorithm back to back at each
size, on the same buffers), and prints, per size and algorithm, the throughput relative to the
library's allreduce (library median time / algorithm median time; above 1 = faster than the
library): the median over repetitions and its range. Results go in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = Path(sys.executable).parent


def mpiexec(n: int) -> list[str]:
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    out = subprocess.run([str(BIN / "mpiexec"), "--version"], capture_output=True, text=True, env=env).stdout
    return [str(BIN / "mpiexec"), *(["--oversubscribe"] if "Open MPI" in out else []), "-n", str(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", default="1M,4M,16M")
    parser.add_argument("--algorithms", default="ring,rabenseifner")
    parser.add_argument("extra", nargs="*", help="more sweep options (after --)")
    args = parser.parse_args()
    from fabricprobe.store import load_runs

    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    names = args.algorithms.split(",")
    ratios: dict[tuple[int, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a.h5"
        for rep in range(args.reps):
            subprocess.run(
                mpiexec(args.ranks)
                + [
                    sys.executable,
                    "-m",
                    "fabricprobe",
                    "sweep",
                    "-o",
                    str(path),
                    "--collectives",
                    "allreduce",
                    "--sizes",
                    args.sizes,
                    "--algorithms",
                    "library," + args.algorithms,
                    "--progress",
                    "none",
                    "--quiet",
                    *args.extra,
                ],
                check=True,
                env=env,
                capture_output=True,
            )
            run = load_runs(str(path))[-1]
            median = {(p["bytes"], p["algorithm"]): p["median_s"] for p in run.points if p["collective"] == "allreduce"}
            for (size, alg), t in median.items():
                if alg != "library":
                    ratios.setdefault((size, alg), []).append(median[(size, "library")] / t)
            print(f"rep {rep + 1}/{args.reps} done", file=sys.stderr)
        version = run.attrs["mpi_vendor"] + " " + run.attrs["mpi_version"]
    print(
        f"\nallreduce float32 sum, n={args.ranks}, {version}, {args.reps} sweeps; throughput relative to the library "
        "(median over sweeps, range)\n"
    )
    print("| size | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for size in sorted({s for s, _ in ratios}):
        cells = []
        for name in names:
            r = ratios.get((size, name), [])
            cells.append(f"{statistics.median(r):.2f} ({min(r):.2f}–{max(r):.2f})" if r else "-")
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
