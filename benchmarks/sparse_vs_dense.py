"""Sparse allreduce against the library's dense allreduce, and top-k selection against argpartition.

    python benchmarks/sparse_vs_dense.py [--ranks 2] [--reps 3] [--size 16M] [--density 0.01]

Runs `fabricprobe sweep --collectives sparse` --reps times and prints, per algorithm, the median time,
the speedup over the dense library allreduce (same size, same sweep), the bytes the busiest rank
sent, and the selection times (fabricprobe's kernel, numpy.argpartition). Results go in
docs/performance.md.
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
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def mpiexec(n: int) -> list[str]:
    out = subprocess.run([str(BIN / "mpiexec"), "--version"], capture_output=True, text=True, env=ENV).stdout
    return [str(BIN / "mpiexec"), *(["--oversubscribe"] if "Open MPI" in out else []), "-n", str(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--size", default="16M")
    parser.add_argument("--density", default="0.01")
    args = parser.parse_args()
    from fabricprobe.store import load_runs

    times: dict[str, list[float]] = {}
    sent: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.h5"
        for _ in range(args.reps):
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
                    "sparse",
                    "--sizes",
                    args.size,
                    "--density",
                    args.density,
                    "--progress",
                    "none",
                    "--quiet",
                ],
                check=True,
                env=ENV,
                capture_output=True,
            )
            run = load_runs(str(path))[-1]
            for p in run.points:
                if p["collective"] in ("allreduce", "sparse_allreduce", "topk_local"):
                    name = p["algorithm"] if p["collective"] != "topk_local" else f"select/{p['algorithm']}"
                    times.setdefault(name, []).append(p["median_s"])
                    if p["collective"] == "sparse_allreduce":
                        sent[name] = p["bytes_sent"]
        vendor = f"{run.attrs['mpi_vendor']} {run.attrs['mpi_version']}"
    dense = statistics.median(times.pop("library"))
    print(f"\n{vendor}, n={args.ranks}, {args.size} float32, density {args.density}, {args.reps} sweeps (medians)\n")
    print("| what | median ms | × dense | KiB sent per rank |")
    print("|---|---|---|---|")
    print(f"| dense library allreduce | {dense * 1e3:.2f} | 1 | {2 * (args.ranks - 1) / args.ranks * 16384:.0f} |")
    for name, values in sorted(times.items()):
        t = statistics.median(values)
        speed = f"{dense / t:.1f}" if not name.startswith("select/") else "-"
        print(f"| {name} | {t * 1e3:.2f} | {speed} | {sent.get(name, 0) // 1024 if name in sent else '-'} |")


if __name__ == "__main__":
    main()
