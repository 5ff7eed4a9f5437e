"""`tune --verify` of two code trees on the same tune-sweep file, interleaved: wall time, launches, and
the verdicts and before/after decisions row by row (issue 54; docs/tuning.md, Time to verified files).

    python benchmarks/verify_speed.py SWEEP.h5 OLD_TREE NEW_TREE --reps 3 [--mpiexec PATH] [--out DIR]

Each tree is a checkout of fabricprobe (`git worktree add /tmp/old COMMIT`); it is put first on
PYTHONPATH, so the ranks the launches start run it too. Each run reads a fresh copy of SWEEP.h5
(tune --verify appends to the file it reads). Launches are counted by a wrapper given as
`--mpiexec` (it appends a line to a log, then runs the real launcher). Prints one line per run and a
summary: median wall and launches per tree, and every check or before/after row whose verdict differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wrapper(real: str, log: Path, folder: Path) -> str:
    path = folder / "mpiexec"
    path.write_text(f'#!/bin/sh\necho launch >> "{log}"\nexec "{real}" "$@"\n')
    path.chmod(0o755)
    return str(path)


def fresh_copy(sweep: str, work: Path) -> str:
    """The tune-sweep file as it was given, for one run: `tune --verify` appends its before/after runs
    to the file it reads, so on one shared file each run would read what the ones before it added
    (a file 6 runs had grown to 130-190 runs cost 0.4-0.6 s a read; docs/tuning.md)."""
    copy = work / "sweep.h5"
    shutil.copyfile(sweep, copy)
    journal = Path(sweep + ".journal")
    Path(str(copy) + ".journal").unlink(missing_ok=True)
    if journal.exists():
        shutil.copyfile(journal, str(copy) + ".journal")
    return str(copy)


def run(tree: str, sweep: str, out: Path, real: str, work: Path) -> dict:
    log = work / "launches.log"
    log.unlink(missing_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    sweep = fresh_copy(sweep, work)
    env = {**os.environ, "PYTHONPATH": tree + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = [sys.executable, "-m", "fabricprobe", "tune", sweep, "-o", str(out), "--verify"]
    argv += ["--mpiexec", wrapper(real, log, work)]
    began = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.monotonic() - began
    manifest = json.loads((out / "tuning.json").read_text()) if (out / "tuning.json").exists() else {}
    launches = len(log.read_text().splitlines()) if log.exists() else 0
    return dict(wall=wall, launches=launches, rc=done.returncode, manifest=manifest, stderr=done.stderr[-2000:])


def checks_of(manifest: dict) -> dict[tuple, str]:
    return {
        (c["collective"], c["comm_size"], c["size"], c["expected"]): c["status"]
        for c in manifest.get("verification", {}).get("checks", [])
    }


def decisions_of(manifest: dict) -> dict[tuple, str]:
    return {(r["collective"], r["comm_size"], r["size"]): r["verdict"] for r in manifest.get("before_after", [])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mpiexec", default=shutil.which("mpiexec"))
    ap.add_argument("--out", default=None, help="keep each run's tuning folder here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="verify-speed-"))
    keep = Path(args.out) if args.out else work
    results: dict[str, list[dict]] = {"old": [], "new": []}
    for rep in range(args.reps):
        for name in ("old", "new") if rep % 2 == 0 else ("new", "old"):  # neither always first
            r = run(getattr(args, name), args.sweep, keep / f"{name}-{rep}", args.mpiexec, work)
            results[name].append(r)
            phases = r["manifest"].get("time_to_verified_files", {})
            print(
                f"{name} rep {rep}: {r['wall']:.1f} s, {r['launches']} launches, exit {r['rc']}"
                + (f", phases {json.dumps(phases)}" if phases else ""),
                flush=True,
            )
            if r["rc"] not in (0, 1):
                print(r["stderr"], file=sys.stderr)
    for name, rs in results.items():
        walls = [r["wall"] for r in rs]
        print(
            f"{name}: wall median {statistics.median(walls):.1f} s (range {min(walls):.1f}-{max(walls):.1f}), "
            f"launches {sorted({r['launches'] for r in rs})}"
        )
    old_wall = statistics.median(r["wall"] for r in results["old"])
    new_wall = statistics.median(r["wall"] for r in results["new"])
    print(f"speed-up of the median wall: {old_wall / new_wall:.1f}x")
    for rep, (old, new) in enumerate(zip(results["old"], results["new"])):
        for what, of in (("check", checks_of), ("before/after", decisions_of)):
            a, b = of(old["manifest"]), of(new["manifest"])
            for key in sorted(set(a) | set(b), key=str):
                if a.get(key) != b.get(key):
                    print(f"rep {rep} {what} {key}: old {a.get(key)}, new {b.get(key)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
