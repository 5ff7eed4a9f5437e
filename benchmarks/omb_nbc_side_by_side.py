"""fabricprobe's issue-35 tests beside OSU Micro-Benchmarks': iallreduce overlap, gatherv, mbw_mr and
put latency, interleaved.

    python benchmarks/omb_nbc_side_by_side.py --omb OMB_MPI_DIR [-n 2] [--reps 5] [--json OUT]

OMB_MPI_DIR is an OMB 7.4 build's `libexec/osu-micro-benchmarks/mpi`, built against the MPI that runs
fabricprobe (see omb_imb_side_by_side.py). Each repetition runs, in an order that rotates from one
repetition to the next, OMB's osu_iallreduce and osu_gatherv (-T mpi_float), osu_mbw_mr and
osu_put_latency, and one fabricprobe sweep of iallreduce and gatherv (float32), mbw_mr and put_latency
(native timer, barrier mode for the collectives, the same iteration counts and OMB's window of 64), so a
slow phase of the machine hits both alike.

Compared, per size, within each repetition, as the median and range over the repetitions:
- iallreduce Pure Comm.: OMB's over fabricprobe's osu_avg_s (the same statistic: mean over ranks of
  each rank's mean); 1 is agreement;
- iallreduce overlap: fabricprobe's minus OMB's, in percentage points (OMB's from its own columns;
  fabricprobe's from its medians, engine/overlap.py);
- gatherv Avg Latency: OMB's over fabricprobe's osu_avg_s, as measured and per byte the root receives.
  OMB's gatherv sends the same block c from every rank; fabricprobe's blocks are uneven with mean c
  (specs/uneven.py: rank r sends ⌊2c(r+1)/(n+1)⌋), so its root (rank 0, the smallest block) receives
  more: at n = 2, 4c/3 where OMB's receives c. The second ratio scales fabricprobe's time by those bytes;
- mbw_mr MB/s: fabricprobe's over OMB's (bandwidths: above 1 is faster);
- put latency (MPI_Win_allocate, MPI_Win_flush: OMB's defaults): OMB's over fabricprobe's.
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
from fabricprobe.specs.uneven import block_counts

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
    plain = ["-m", f"{min(SIZES)}:{max(SIZES)}", "-i", str(args.iters), "-x", str(args.warmup)]
    mbw = rows(run(launch + [str(args.omb / "pt2pt" / "osu_mbw_mr"), *plain], env))
    put = rows(run(launch + [str(args.omb / "one-sided" / "osu_put_latency"), *plain], env))
    # osu_iallreduce: Overall Compute Pure-Comm Overlap; osu_gatherv: Avg Latency; osu_mbw_mr: MB/s
    # Messages/s; osu_put_latency: Latency
    keep = (("iallreduce", nbc), ("gatherv", gatherv), ("mbw_mr", mbw), ("put_latency", put))
    return {name: {s: v for s, v in found.items() if s in SIZES} for name, found in keep}


def fabricprobe(args, launch, env, workdir: str) -> dict[str, dict[int, dict]]:
    path = os.path.join(workdir, "fp.h5")
    if os.path.exists(path):
        os.unlink(path)
    # fabricprobe's sizes are whole buffers: n blocks of OMB's size for gatherv, OMB's size for iallreduce
    sizes = sorted(set(SIZES) | {s * args.n for s in SIZES})
    sweep = [sys.executable, "-m", "fabricprobe", "sweep", "-o", path]
    sweep += ["--collectives", "iallreduce,gatherv,mbw_mr,put_latency", "--pairs", "intra"]
    sweep += ["--sizes", ",".join(map(str, sizes)), "--dtypes", "float32", "--ops", "sum", "--timer", "native"]
    sweep += ["--iters", str(args.iters), "--warmup", str(args.warmup), "--ci-target", "0"]
    sweep += ["--progress", "none", "--quiet", "--no-bound-probe"]
    run(launch + sweep, env)
    doc = json.loads(run([sys.executable, "-m", "fabricprobe", "report", path, "--format", "json"], env))
    out: dict[str, dict[int, dict]] = {"iallreduce": {}, "gatherv": {}, "mbw_mr": {}, "put_latency": {}}
    for p in doc["runs"][0]["points"]:
        if p["status"] != "ok" or p["collective"] not in out:
            continue
        gatherv = p["collective"] == "gatherv"
        size = p["count"] * 4 if gatherv else p["bytes"]  # OMB's gatherv Size: the (mean) block
        if size in SIZES and gatherv != (p["requested_bytes"] in SIZES):
            out[p["collective"]][size] = p
    return out


def summary(values: list[float], fmt: str = "{:.2f}") -> str:
    if not values:
        return "-"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def side_by_side_parser(description: str) -> argparse.ArgumentParser:
    """The options of an interleaved side-by-side with OMB's binaries (this script's and its successors')."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--omb", type=Path, required=True, help="OMB's libexec/osu-micro-benchmarks/mpi")
    parser.add_argument("--mpiexec", default=str(Path(sys.executable).parent / "mpiexec"))
    parser.add_argument("--mpiexec-args", default="", help="extra launcher arguments, quoted")
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", type=Path, help="also write every repetition's numbers here")
    return parser


def main() -> None:
    parser = side_by_side_parser(__doc__)
    args = parser.parse_args()
    wanted = ("collective/osu_iallreduce", "collective/osu_gatherv", "pt2pt/osu_mbw_mr", "one-sided/osu_put_latency")
    for name in wanted:
        if not os.access(args.omb / name, os.X_OK):
            parser.exit(2, f"{parser.prog}: error: {args.omb / name} is not an executable\n")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = [args.mpiexec, *args.mpiexec_args.split(), "-n", str(args.n)]
    lines = run([args.mpiexec, "--version"], env).splitlines()
    version = next((x.strip() for x in lines if "Open MPI" in x or "Version:" in x), lines[0] if lines else "?")
    pure: dict[int, list[float]] = {s: [] for s in SIZES}
    overlap: dict[int, list[float]] = {s: [] for s in SIZES}
    omb_overlap: dict[int, list[float]] = {s: [] for s in SIZES}
    fp_overlap: dict[int, list[float]] = {s: [] for s in SIZES}
    gatherv: dict[int, list[float]] = {s: [] for s in SIZES}
    gatherv_bytes: dict[int, list[float]] = {s: [] for s in SIZES}
    mbw: dict[int, list[float]] = {s: [] for s in SIZES}
    put: dict[int, list[float]] = {s: [] for s in SIZES}
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
                    ratio = o["gatherv"][size][0] / (f["gatherv"][size]["osu_avg_s"] * 1e6)
                    counts = block_counts(f["gatherv"][size]["count"], args.n)
                    received = (int(counts.sum()) - int(counts[0])) / ((args.n - 1) * f["gatherv"][size]["count"])
                    gatherv[size].append(ratio)
                    gatherv_bytes[size].append(ratio * received)
                if size in o["mbw_mr"] and size in f["mbw_mr"]:
                    p = f["mbw_mr"][size]
                    fp_mbs = p["busbw_factor"] * p["bytes"] / p["osu_avg_s"] / 1e6
                    mbw[size].append(fp_mbs / o["mbw_mr"][size][0])
                if size in o["put_latency"] and size in f["put_latency"]:
                    put[size].append(o["put_latency"][size][0] / (f["put_latency"][size]["osu_avg_s"] * 1e6))
            fields = ("osu_avg_s", "median_s", "overall_s", "compute_s", "overlap_pct", "count", "busbw_factor")
            mine = {c: {s: {k: p[k] for k in fields} for s, p in v.items()} for c, v in f.items()}
            record.append({"omb": o, "fabricprobe": mine})

    print(f"{version}; n = {args.n}; {args.reps} repetitions, {args.iters} iterations ({args.warmup} warm-up)")
    print("OMB / fabricprobe: median (range over repetitions); overlap in % and the difference in points\n")
    print("| size | iallreduce Pure Comm. | OMB overlap % | fabricprobe overlap % | difference |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        print(
            f"| {size} | {summary(pure[size])} | {summary(omb_overlap[size], '{:.1f}')} | "
            f"{summary(fp_overlap[size], '{:.1f}')} | {summary(overlap[size], '{:+.1f}')} |"
        )
    print("\n| size | gatherv Avg | gatherv per byte received | mbw_mr MB/s (fabricprobe / OMB) | put latency |")
    print("|---|---|---|---|---|")
    for size in SIZES:
        print(
            f"| {size} | {summary(gatherv[size])} | {summary(gatherv_bytes[size])} | {summary(mbw[size])} | "
            f"{summary(put[size])} |"
        )
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
