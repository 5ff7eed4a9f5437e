"""fabricprobe's library numbers beside OSU Micro-Benchmarks' and IMB's, measured interleaved.

    python benchmarks/omb_imb_side_by_side.py --omb OMB_MPI_DIR --imb IMB-MPI1 [-n 2] [--reps 9]

OMB_MPI_DIR is an OMB build's `libexec/osu-micro-benchmarks/mpi` (with `collective/osu_allreduce` and
`pt2pt/osu_latency`); IMB-MPI1 is Intel MPI Benchmarks' binary. Build both from their public sources
against the MPI that runs fabricprobe (the same mpicc), e.g.

    ./configure CC=$VENV/bin/mpicc CXX=$VENV/bin/mpicxx && make && make install   # OMB 7.4
    make IMB-MPI1 CC=$VENV/bin/mpicc CXX=$VENV/bin/mpicxx                          # IMB

Each repetition runs, in an order that rotates from one repetition to the next, OMB (osu_allreduce
-f -T mpi_float, osu_latency), IMB (Allreduce, PingPong; reductions on MPI_FLOAT) and one fabricprobe
sweep (allreduce float32 sum and latency, native timer, barrier mode, the same iteration counts), so a
slow phase of the machine hits all three alike. Every number compared is the tools' own statistic of
the same thing: OMB's Avg (mean over ranks of each rank's mean time), fabricprobe's `osu_avg_s` (the
same statistic from its own samples) and its median, IMB's t_avg (allreduce) and t (ping-pong, half a
round trip). The table gives, per size, each tool's speedup over OMB within a repetition (OMB time /
this time; 1 is agreement), as the median and range over the repetitions; never one ratio from
different moments.

`--aa` adds a second OMB run to every repetition (an A/A test: OMB against itself, by the same
protocol), so the table shows how far two launches of one unchanged program land apart. A ratio
between tools means something only where it lies outside that column.
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

SIZES = [8, 1024, 65536, 1 << 20, 4 << 20]


def run(argv: list[str], env: dict[str, str]) -> str:
    """A launch, made again only when mpiexec failed before any rank ran (run_launch: Open MPI's PMIx
    listener now and then fails to start; it cost one A/A set three repetitions)."""
    out = run_launch(argv, env=env, timeout=600)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(argv)}\n{out.stderr[-2000:]}")
    return out.stdout


def rows(text: str, columns: int) -> dict[int, list[float]]:
    """size -> numbers, from the data lines of OMB's or IMB's text."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= columns and not line.lstrip().startswith("#"):
            try:
                out[int(fields[0])] = [float(x) for x in fields[1:]]
            except ValueError:
                continue
    return out


def omb(args, launch, env, bench: str, iters: int, warmup: int) -> dict[int, float]:
    lo, hi = min(SIZES), max(SIZES)
    if bench == "allreduce":
        argv = [str(args.omb / "collective" / "osu_allreduce"), "-f", "-T", "mpi_float"]
    else:
        argv = [str(args.omb / "pt2pt" / "osu_latency")]
    text = run(launch + argv + ["-m", f"{lo}:{hi}", "-i", str(iters), "-x", str(warmup)], env)
    return {size: values[0] for size, values in rows(text, 2).items() if size in SIZES}  # Avg Latency(us)


def imb(args, launch, env, bench: str, iters: int, msglen: str) -> dict[int, float]:
    name = "Allreduce" if bench == "allreduce" else "PingPong"
    text = run(launch + [str(args.imb), name, "-msglen", msglen, "-iter", str(iters), "-npmin", str(args.n)], env)
    # Allreduce: #bytes #repetitions t_min t_max t_avg; PingPong: #bytes #repetitions t Mbytes/sec
    pick = (lambda v: v[3]) if bench == "allreduce" else (lambda v: v[1])
    return {size: pick(values) for size, values in rows(text, 4).items() if size in SIZES}


def fabricprobe(args, launch, env, iters: int, warmup: int, workdir: str) -> dict[str, dict[int, tuple]]:
    path = os.path.join(workdir, "fp.h5")
    if os.path.exists(path):
        os.unlink(path)
    sweep = [sys.executable, "-m", "fabricprobe", "sweep", "-o", path, "--collectives", "allreduce,latency"]
    sweep += ["--sizes", ",".join(map(str, SIZES)), "--dtypes", "float32", "--ops", "sum", "--timer", "native"]
    sweep += ["--iters", str(iters), "--warmup", str(warmup), "--ci-target", "0", "--pairs", "intra"]
    sweep += ["--progress", "none", "--quiet"]
    run(launch + sweep, env)
    doc = json.loads(run([sys.executable, "-m", "fabricprobe", "report", path, "--format", "json"], env))
    out: dict[str, dict[int, tuple]] = {"allreduce": {}, "latency": {}}
    for p in doc["runs"][0]["points"]:
        if p["collective"] in out and p["status"] == "ok":
            out[p["collective"]][p["bytes"]] = (p["osu_avg_s"] * 1e6, p["median_s"] * 1e6)
    return out


def summary(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})" if ratios else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--omb", type=Path, required=True, help="OMB's libexec/osu-micro-benchmarks/mpi")
    parser.add_argument("--imb", type=Path, required=True, help="the IMB-MPI1 binary")
    parser.add_argument("--mpiexec", default=str(Path(sys.executable).parent / "mpiexec"))
    parser.add_argument("--mpiexec-args", default="", help="extra launcher arguments, quoted")
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--aa", action="store_true", help="also run OMB a second time per repetition (A/A)")
    args = parser.parse_args()
    for path in (args.omb / "collective" / "osu_allreduce", args.omb / "pt2pt" / "osu_latency", args.imb):
        if not os.access(path, os.X_OK):
            parser.exit(2, f"{parser.prog}: error: {path} is not an executable (build OMB and IMB first)\n")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = [args.mpiexec, *args.mpiexec_args.split(), "-n", str(args.n)]
    lines = run([args.mpiexec, "--version"], env).splitlines()
    version = next((x.strip() for x in lines if "Open MPI" in x or "Version:" in x), lines[0] if lines else "?")
    ratios: dict[tuple, list[float]] = {}
    with tempfile.TemporaryDirectory() as workdir:
        msglen = os.path.join(workdir, "msglen")
        Path(msglen).write_text("\n".join(map(str, SIZES)) + "\n")
        tools = ["omb", "imb", "fabricprobe"] + (["omb again"] if args.aa else [])
        for rep in range(args.reps):
            got: dict[str, dict] = {}
            k = rep % len(tools)
            for tool in tools[k:] + tools[:k]:
                if tool.startswith("omb"):
                    got[tool] = {
                        b: omb(args, launch, env, b, args.iters, args.warmup) for b in ("allreduce", "latency")
                    }
                elif tool == "imb":
                    got["imb"] = {b: imb(args, launch, env, b, args.iters, msglen) for b in ("allreduce", "latency")}
                else:
                    got["fabricprobe"] = fabricprobe(args, launch, env, args.iters, args.warmup, workdir)
            for bench in ("allreduce", "latency"):
                for size in SIZES:
                    ref = got["omb"][bench].get(size)
                    if not ref:
                        continue
                    fp = got["fabricprobe"][bench].get(size)
                    if fp:
                        ratios.setdefault((bench, size, "fabricprobe Avg"), []).append(ref / fp[0])
                        ratios.setdefault((bench, size, "fabricprobe median"), []).append(ref / fp[1])
                    if got["imb"][bench].get(size):
                        ratios.setdefault((bench, size, "IMB"), []).append(ref / got["imb"][bench][size])
                    if args.aa and got["omb again"][bench].get(size):
                        ratios.setdefault((bench, size, "OMB again"), []).append(ref / got["omb again"][bench][size])
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    print(f"{version}, {args.n} ranks, {args.reps} interleaved repetitions, {args.iters} iterations")
    print()
    columns = ["fabricprobe Avg", "fabricprobe median", "IMB"] + (["OMB again"] if args.aa else [])
    print("| test | size | " + " | ".join(f"{c} vs OMB" for c in columns) + " |")
    print("|---" * (len(columns) + 2) + "|")
    for bench, label in (("allreduce", "allreduce float sum"), ("latency", "latency (half round trip)")):
        for size in SIZES:
            cells = [summary(ratios.get((bench, size, k), [])) for k in columns]
            print(f"| {label} | {size} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
