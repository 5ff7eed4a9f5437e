"""fabricprobe's non-blocking overlap and vector collectives beside OSU Micro-Benchmarks', interleaved.

    python benchmarks/omb_nbc_side_by_side.py --omb OMB_MPI_DIR [-n 2] [--reps 5] [--json OUT]

OMB_MPI_DIR is an OMB 7.4 build's `libexec/osu-micro-benchmarks/mpi`, built against the MPI that runs
fabricprobe (see omb_imb_side_by_side.py). Each repetition runs, in an order that rotates from one
repetition to the next, OMB's osu_iallreduce and osu_gatherv (-T mpi_float) and one fabricprobe sweep of
iallreduce and gatherv (float32, native timer, barrier mode, the same iteration counts), so a slow phase
of the machine hits both alike.

Compared, per size, within each repetition, as the median and range over the repetitions:
- iallreduce Pure Comm.: OMB's over fabricprobe's osu_avg_s (the same statistic: mean over ranks of
  each rank's mean); 1 is agreement;
- iallreduce overlap: fabricprobe's minus OMB's, in percentage points (OMB's from its own columns;
  fabricprobe's from its medians, engine/overlap.py);
- gatherv Avg Latency: OMB's over fabricprobe's osu_avg_s. OMB's gatherv sends the same block from every
  rank; fabricprobe's blocks are uneven with the same mean (specs/uneven.py), so the root receives the
  same bytes give or take n elements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from fabricprobe.mpienv.launcher import run_launch

SIZES = [8, 1024, 65536, 1 << 20]


def run(argv: list[str], env: dict[str, str]) -> str:
    out = run_launch(argv, env=env, timeout=900)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(argv)}\n{out.stderr[-2000:]}")
    return out.stdout


def rows(text: str) -> dict[int, list[float]]:
    """size -> numbers, from the data lines of OMB's text."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and not line.lstrip().startswith("#"):
            try:
                out[int(fields[0])] = [float(x) for x in fields[1:]]
            except ValueError:
                continue
    return out


def omb(args, launch, env) -> dict[str, dict[int, list[float]]]:
    common = ["-T", "mpi_float", "-m", f"{min(SIZES)}:{max(SIZES)}", "-i", str(args.iters), "-x", str(args.warmup)]
    nbc = rows(run(launch + [str(args.omb / "collective" / "osu_iallreduce"), *common], env))
    gatherv = rows(run(launch + [str(args.omb / "collective" / "osu_gatherv"), *common], env))
    # osu_iallreduce: Overall Compute Pure-Comm Overlap; osu_gatherv: Avg Latency
    return {
        "iallreduce": {s: v for s, v in nbc.items() if s in SIZES},
        "gatherv": {s: v for s, v in gatherv.items() if s in SIZES},
    }


def fabricprobe(args, launch, env, workdir: str) -> dict[str, dict[int, dict]]:
    path = os.path.join(workdir, "fp.h5")
    if os.path.exists(path):
        os.unlink(path)
    # fabricprobe's sizes are whole buffers: n blocks of OMB's size for gatherv, OMB's size for iallreduce
    sizes = sorted(set(SIZES) | {s * args.n for s in SIZES})
    sweep = [sys.executable, "-m", "fabricprobe", "sweep", "-o", path, "--collectives", "iallreduce,gatherv"]
    sweep += ["--sizes", ",".join(map(str, sizes)), "--dtypes", "float32", "--ops", "sum", "--timer", "native"]
    sweep += ["--iters", str(args.iters), "--warmup", str(args.warmup), "--ci-target", "0"]
    sweep += ["--progress", "none", "--quiet", "--no-bound-probe"]
    run(launch + sweep, env)
    doc = json.loads(run([sys.executable, "-m", "fabricprobe", "report", path, "--format", "json"], env))
    out: dict[str, dict[int, dict]] = {"iallreduce": {}, "gatherv": {}}
    for p in doc["runs"][0]["points"]:
        if p["status"] != "ok" or p["collective"] not in out:
            continue
        size = p["bytes"] if p["collective"] == "iallreduce" else p["count"] * 4  # OMB's Size: the mean block
        if size in SIZES and (p["collective"] == "iallreduce") == (p["requested_bytes"] in SIZES):
            out[p["collective"]][size] = p
    return out


def summary(values: list[float], fmt: str = "{:.2f}") -> str:
    if not values:
        return "-"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--omb", type=Path, required=True, help="OMB's libexec/osu-micro-benchmarks/mpi")
    parser.add_argument("--mpiexec", default=str(Path(sys.executable).parent / "mpiexec"))
    parser.add_argument("--mpiexec-args", default="", help="extra launcher arguments, quoted")
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write every repetition's numbers here")
    args = parser.parse_args()
    for name in ("osu_iallreduce", "osu_gatherv"):
        if not os.access(args.omb / "collective" / name, os.X_OK):
            parser.exit(2, f"{parser.prog}: error: {args.omb / 'collective' / name} is not an executable\n")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = [args.mpiexec, *args.mpiexec_args.split(), "-n", str(args.n)]
    lines = run([args.mpiexec, "--version"], env).splitlines()
    version = next((x.strip() for x in lines if "Open MPI" in x or "Version:" in x), lines[0] if lines else "?")
    pure: dict[int, list[float]] = {s: [] for s in SIZES}
    overlap: dict[int, list[float]] = {s: [] for s in SIZES}
    omb_overlap: dict[int, list[float]] = {s: [] for s in SIZES}
    fp_overlap: dict[int, list[float]] = {s: [] for s in SIZES}
    gatherv: dict[int, list[float]] = {s: [] for s in SIZES}
    record = []
    with tempfile.TemporaryDirectory() as workdir:
        for rep in range(args.reps):
            got = {}
            for tool in ["omb", "fabricprobe"] if rep % 2 == 0 else ["fabricprobe", "omb"]:
                got[tool] = omb(args, launch, env) if tool == "omb" else fabricprobe(args, launch, env, workdir)
            o, f = got["omb"], got["fabricprobe"]
            for size in SIZES:
                if size in o["iallreduce"] and size in f["iallreduce"]:
                    _, _, omb_pure, omb_pct = o["iallreduce"][size][:4]
                    p = f["iallreduce"][size]
                    pure[size].append(omb_pure / (p["osu_avg_s"] * 1e6))
                    overlap[size].append(p["overlap_pct"] - omb_pct)
                    omb_overlap[size].append(omb_pct)
                    fp_overlap[size].append(p["overlap_pct"])
                if size in o["gatherv"] and size in f["gatherv"]:
                    gatherv[size].append(o["gatherv"][size][0] / (f["gatherv"][size]["osu_avg_s"] * 1e6))
            record.append(
                {
                    "omb": o,
                    "fabricprobe": {
                        c: {
                            s: {k: p[k] for k in ("osu_avg_s", "median_s", "overall_s", "compute_s", "overlap_pct")}
                            for s, p in v.items()
                        }
                        for c, v in f.items()
                    },
                }
            )
    print(f"{version}; n = {args.n}; {args.reps} repetitions, {args.iters} iterations ({args.warmup} warm-up)")
    print("OMB / fabricprobe: median (range over repetitions); overlap in % and the difference in points\n")
    print("| size | iallreduce Pure Comm. | OMB overlap % | fabricprobe overlap % | difference | gatherv Avg |")
    print("|---|---|---|---|---|---|")
    for size in SIZES:
        print(
            f"| {size} | {summary(pure[size])} | {summary(omb_overlap[size], '{:.1f}')} | "
            f"{summary(fp_overlap[size], '{:.1f}')} | {summary(overlap[size], '{:+.1f}')} | {summary(gatherv[size])} |"
        )
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
