"""docs/scale.md, "tune-sweep": what each communicator size costs in one tune-sweep.

    python benchmarks/tune_cost.py OUT.h5 -- -n 8 --collectives allreduce     # runs tune-sweep, then tabulates
    python benchmarks/tune_cost.py OUT.h5                                     # tabulates an existing file

Per communicator size: the points measured, the sum of their wall times (each point's `duration_s`:
warm-up, timed batches, validation) and the mean per point; then the whole command's wall time, which
also holds the launch, the start-up and the switching between algorithms."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import defaultdict

from fabricprobe.store import load_runs


def main() -> int:
    path, *rest = sys.argv[1:]
    if rest[:1] == ["--"]:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fabricprobe", "tune-sweep", "-o", path, *rest[1:]], check=True)
        print(f"tune-sweep wall time: {time.perf_counter() - t0:.1f} s")
    seconds: dict[int, list[float]] = defaultdict(list)
    for run in load_runs(path):
        for p in run.points:
            seconds[int(p["nranks"])].append(float(p["duration_s"]))
    print(f"{'ranks':>6} {'points':>7} {'seconds':>8} {'per point':>10}")
    for n in sorted(seconds):
        xs = seconds[n]
        print(f"{n:>6} {len(xs):>7} {sum(xs):>8.1f} {sum(xs) / len(xs):>10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
