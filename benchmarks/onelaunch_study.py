"""docs/tuning.md, "Tuning in one launch": exhaustive tune-sweeps with `--switch mpit` (one launch)
against `--switch launch` (one launch per algorithm), interleaved, several repetitions, the same
options otherwise; the wall time of each, its launch count and its measurement time; every file kept
for the agreement analysis (benchmarks/onelaunch_agreement.py).

    python benchmarks/onelaunch_study.py OUT --name ompi-n4 -n 4 --reps 3 [--sizes 8,1K,64K,1M] [-- TUNE-SWEEP ARGS]

Run it with the Python of the environment whose MPI is measured (it calls `python -m fabricprobe`).
Repetition r runs mpit first when r is even, launch first when it is odd. Rows are appended to
OUT/NAME.jsonl, one per tune-sweep: method, repetition, wall seconds, launches (the tune-sweep's own
count), points, measurement seconds (the points' duration_s summed)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fabricprobe.store import load_runs


def one(out: Path, name: str, method: str, rep: int, n: int, extra: list[str]) -> dict:
    path = out / f"{name}-{method}-{rep}.h5"
    for stale in (path, Path(f"{path}.journal")):
        if stale.exists():
            stale.unlink()
    argv = [sys.executable, "-m", "fabricprobe", "tune-sweep", "-n", str(n), "--switch", method, "-o", str(path)]
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    started = time.monotonic()
    done = subprocess.run(argv + extra, capture_output=True, text=True, env=env)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{method} rep {rep} failed ({done.returncode}): {done.stderr[-2000:]}")
    runs = load_runs(str(path))
    record = next((r.attrs.get("tune_sweep") for r in runs if r.attrs.get("tune_sweep")), {})
    points = [p for r in runs for p in r.points]
    return {
        "name": name,
        "method": method,
        "rep": rep,
        "n": n,
        "args": extra,
        "wall_s": round(wall, 2),
        "launches": record.get("launches"),
        "summary": record.get("summary"),
        "fallbacks": record.get("fallbacks"),
        "points": len(points),
        "measured_s": round(sum(p["duration_s"] for p in points), 2),
        "file": str(path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("-n", type=int, required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--first-rep", type=int, default=0, help="number of the first repetition (to add to a study)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    extra = argv[cut + 1 :]  # tune-sweep's own options
    args.out.mkdir(parents=True, exist_ok=True)
    rows = args.out / f"{args.name}.jsonl"
    for rep in range(args.first_rep, args.first_rep + args.reps):
        for method in ("mpit", "launch") if rep % 2 == 0 else ("launch", "mpit"):
            row = one(args.out, args.name, method, rep, args.n, extra)
            with rows.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps({k: row[k] for k in ("method", "rep", "wall_s", "launches", "points", "measured_s")}))


if __name__ == "__main__":
    main()
