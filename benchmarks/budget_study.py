"""docs/tuning.md, economical tuning in one launch: the exhaustive tune-sweep and live `--budget F`
ones, each timed from the outside, repetitions interleaved (exhaustive, budget, budget, exhaustive, ...),
then `tune-eval` of every budgeted file against every exhaustive one (regret with bootstrap intervals).

    python benchmarks/budget_study.py OUT --name ompi-n8 -n 8 --reps 2 --budget 0.25 [--lab NAME] -- TUNE-SWEEP ARGS

Run it with the Python of the environment whose MPI is measured. With --lab, every tune-sweep runs
through `fabricprobe lab run --name NAME --` (the lab must be up). Rows go to OUT/NAME-budget.jsonl:
kind (exhaustive or budget), repetition, wall seconds, launch summary, points, measurement seconds;
and per budgeted file, tune-eval's rows against the first exhaustive file (and the others)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fabricprobe.store import load_runs

ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
FP = [sys.executable, "-m", "fabricprobe"]


def sweep(path: Path, n: int, extra: list[str], lab: str | None) -> dict:
    for stale in (path, Path(f"{path}.journal")):
        if stale.exists():
            stale.unlink()
    argv = [*FP, *(["lab", "run", "--name", lab, "--"] if lab else []), "tune-sweep", "-n", str(n), "-o", str(path)]
    started = time.monotonic()
    done = subprocess.run(argv + extra, capture_output=True, text=True, env=ENV)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{path.name} failed ({done.returncode}): {done.stderr[-2000:]}")
    runs = load_runs(str(path))
    record = next((r.attrs.get("tune_sweep") for r in runs if r.attrs.get("tune_sweep")), {})
    points = [p for r in runs for p in r.points]
    return {
        "wall_s": round(wall, 2),
        "summary": record.get("summary"),
        "points": len(points),
        "measured_s": round(sum(p["duration_s"] for p in points), 2),
        "rounds": [line for line in done.stderr.splitlines() if line.startswith("round ")],
        "file": str(path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--name", required=True)
    parser.add_argument("-n", type=int, required=True)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--budget", default="0.25")
    parser.add_argument("--lab")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    extra = argv[cut + 1 :]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = args.out / f"{args.name}-budget.jsonl"
    exhaustive, budgeted = [], []
    for rep in range(args.reps):
        order = ("exhaustive", "budget") if rep % 2 == 0 else ("budget", "exhaustive")
        for kind in order:
            path = args.out / f"{args.name}-{kind}-{rep}.h5"
            options = extra + (["--budget", args.budget] if kind == "budget" else [])
            row = {"name": args.name, "kind": kind, "rep": rep, "n": args.n, "args": options}
            row.update(sweep(path, args.n, options, args.lab))
            (exhaustive if kind == "exhaustive" else budgeted).append(row)
            with rows.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps({k: row[k] for k in ("kind", "rep", "wall_s", "summary", "points", "measured_s")}))
    for truth in exhaustive:
        evaluated = args.out / f"{args.name}-eval-{truth['rep']}.json"
        files = [b["file"] for b in budgeted]
        done = subprocess.run(
            [*FP, "tune-eval", truth["file"], *files, "--replay", "0.1,0.25,0.5", "--json", str(evaluated)],
            capture_output=True,
            text=True,
            env=ENV,
        )
        if done.returncode != 0:
            raise SystemExit(f"tune-eval failed: {done.stderr[-2000:]}")
        print(done.stdout)
        with rows.open("a") as f:
            found = json.loads(evaluated.read_text())
            f.write(json.dumps({"kind": "eval", "truth": truth["file"], "rows": found}) + "\n")


if __name__ == "__main__":
    main()
