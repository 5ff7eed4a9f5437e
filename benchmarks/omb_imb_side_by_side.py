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

`--probe CORE_PINGPONG` (4mib-pingpong/core_pingpong.c, compiled) runs the no-MPI core-to-core round trip
before and after every launch and names the launch's machine mode: fast when both round trips are
under `--probe-split` ns, slow when both are over, changed otherwise. A second table then gives each
tool's speedup over OMB twice: over the repetitions where both launches ran in one mode (both fast or
both slow), and over those where one ran fast and the other slow. A third pools each tool's launches
that ran fast throughout and compares their medians. These show whether a gap between tools follows
the tools or the machine's mode. `--sizes` narrows the sizes (more repetitions in the same time).
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
COLUMN_TOOL = {  # a table column -> the tool whose launch it reads
    "fabricprobe Avg": "fabricprobe",
    "fabricprobe median": "fabricprobe",
    "IMB": "imb",
    "OMB again": "omb again",
}


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
    lo, hi = min(args.sizes), max(args.sizes)
    if bench == "allreduce":
        argv = [str(args.omb / "collective" / "osu_allreduce"), "-f", "-T", "mpi_float"]
    else:
        argv = [str(args.omb / "pt2pt" / "osu_latency")]
    text = run(launch + argv + ["-m", f"{lo}:{hi}", "-i", str(iters), "-x", str(warmup)], env)
    return {size: values[0] for size, values in rows(text, 2).items() if size in args.sizes}  # Avg Latency(us)


def imb(args, launch, env, bench: str, iters: int, msglen: str) -> dict[int, float]:
    name = "Allreduce" if bench == "allreduce" else "PingPong"
    text = run(launch + [str(args.imb), name, "-msglen", msglen, "-iter", str(iters), "-npmin", str(args.n)], env)
    # Allreduce: #bytes #repetitions t_min t_max t_avg; PingPong: #bytes #repetitions t Mbytes/sec
    pick = (lambda v: v[3]) if bench == "allreduce" else (lambda v: v[1])
    return {size: pick(values) for size, values in rows(text, 4).items() if size in args.sizes}


def fabricprobe(args, launch, env, iters: int, warmup: int, workdir: str) -> dict[str, dict[int, tuple]]:
    path = os.path.join(workdir, "fp.h5")
    if os.path.exists(path):
        os.unlink(path)
    sweep = [sys.executable, "-m", "fabricprobe", "sweep", "-o", path, "--collectives", "allreduce,latency"]
    sweep += ["--sizes", ",".join(map(str, args.sizes)), "--dtypes", "float32", "--ops", "sum", "--timer", "native"]
    sweep += ["--iters", str(iters), "--warmup", str(warmup), "--ci-target", "0", "--pairs", "intra"]
    sweep += ["--progress", "none", "--quiet"]
    run(launch + sweep, env)
    doc = json.loads(run([sys.executable, "-m", "fabricprobe", "report", path, "--format", "json"], env))
    out: dict[str, dict[int, tuple]] = {"allreduce": {}, "latency": {}}
    for p in doc["runs"][0]["points"]:
        if p["collective"] in out and p["status"] == "ok":
            out[p["collective"]][p["bytes"]] = (p["osu_avg_s"] * 1e6, p["median_s"] * 1e6)
    return out


def probed(args, work):
    """(work's result, the machine's mode around it): the core-to-core round trip before and after."""
    if not args.probe:
        return work(), "unprobed"
    before = float(run([str(args.probe), "300000"], os.environ).strip())
    result = work()
    after = float(run([str(args.probe), "300000"], os.environ).strip())
    if max(before, after) < args.probe_split:
        return result, "fast"
    return result, "slow" if min(before, after) >= args.probe_split else "changed"


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
    parser.add_argument("--probe", type=Path, help="4mib-pingpong/core_pingpong.c compiled: name each launch's mode")
    parser.add_argument(
        "--sizes", type=lambda v: [int(x) for x in v.split(",")], default=SIZES, help="bytes, comma-separated"
    )
    parser.add_argument("--probe-split", type=float, default=200.0, help="ns between the fast and slow modes")
    args = parser.parse_args()
    binaries = [args.omb / "collective" / "osu_allreduce", args.omb / "pt2pt" / "osu_latency", args.imb]
    for path in binaries + ([args.probe] if args.probe else []):
        if not os.access(path, os.X_OK):
            parser.exit(2, f"{parser.prog}: error: {path} is not an executable (build OMB, IMB and the probe first)\n")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = [args.mpiexec, *args.mpiexec_args.split(), "-n", str(args.n)]
    lines = run([args.mpiexec, "--version"], env).splitlines()
    version = next((x.strip() for x in lines if "Open MPI" in x or "Version:" in x), lines[0] if lines else "?")
    ratios: dict[tuple, list[float]] = {}
    by_mode: dict[tuple, list[float]] = {}  # (bench, size, tool, "same mode" | "modes differ") -> ratios
    modes: list[dict[str, str]] = []
    pooled: dict[tuple, list[float]] = {}  # (bench, size, column, mode) -> that tool's launches' times, µs
    with tempfile.TemporaryDirectory() as workdir:
        msglen = os.path.join(workdir, "msglen")
        Path(msglen).write_text("\n".join(map(str, args.sizes)) + "\n")
        tools = ["omb", "imb", "fabricprobe"] + (["omb again"] if args.aa else [])
        for rep in range(args.reps):
            got: dict[str, dict] = {}
            mode: dict[tuple, str] = {}  # (tool, bench) -> the machine's mode around that launch
            k = rep % len(tools)
            for tool in tools[k:] + tools[:k]:
                if tool == "fabricprobe":
                    got[tool], m = probed(
                        args, lambda: fabricprobe(args, launch, env, args.iters, args.warmup, workdir)
                    )
                    mode.update({(tool, b): m for b in ("allreduce", "latency")})
                    continue
                got[tool] = {}
                for b in ("allreduce", "latency"):
                    if tool == "imb":
                        work = lambda b=b: imb(args, launch, env, b, args.iters, msglen)  # noqa: E731
                    else:
                        work = lambda b=b: omb(args, launch, env, b, args.iters, args.warmup)  # noqa: E731
                    got[tool][b], mode[(tool, b)] = probed(args, work)
            modes.append({f"{t} {b}": m for (t, b), m in mode.items()})
            for bench in ("allreduce", "latency"):
                for size in args.sizes:
                    ref = got["omb"][bench].get(size)
                    if not ref:
                        continue
                    fp = got["fabricprobe"][bench].get(size)
                    theirs = {
                        "fabricprobe Avg": fp[0] if fp else None,
                        "fabricprobe median": fp[1] if fp else None,
                        "IMB": got["imb"][bench].get(size),
                        "OMB again": got.get("omb again", {}).get(bench, {}).get(size),
                    }
                    pooled.setdefault((bench, size, "OMB", mode[("omb", bench)]), []).append(ref)
                    for column, value in theirs.items():
                        if not value:
                            continue
                        tool = COLUMN_TOOL[column]
                        pooled.setdefault((bench, size, column, mode[(tool, bench)]), []).append(value)
                        ratios.setdefault((bench, size, column), []).append(ref / value)
                        pair = {mode[("omb", bench)], mode[(tool, bench)]}
                        if pair in ({"fast"}, {"slow"}):
                            by_mode.setdefault((bench, size, column, "same mode"), []).append(ref / value)
                        elif pair == {"fast", "slow"}:
                            by_mode.setdefault((bench, size, column, "modes differ"), []).append(ref / value)
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    print(f"{version}, {args.n} ranks, {args.reps} interleaved repetitions, {args.iters} iterations")
    print()
    columns = ["fabricprobe Avg", "fabricprobe median", "IMB"] + (["OMB again"] if args.aa else [])
    print("| test | size | " + " | ".join(f"{c} vs OMB" for c in columns) + " |")
    print("|---" * (len(columns) + 2) + "|")
    for bench, label in (("allreduce", "allreduce float sum"), ("latency", "latency (half round trip)")):
        for size in args.sizes:
            cells = [summary(ratios.get((bench, size, k), [])) for k in columns]
            print(f"| {label} | {size} | " + " | ".join(cells) + " |")
    if args.probe:
        print()
        print(f"The machine's mode around each launch (core-to-core round trip split at {args.probe_split:g} ns):")
        for rep, m in enumerate(modes, 1):
            print(f"- repetition {rep}: " + ", ".join(f"{k} {v}" for k, v in sorted(m.items())))
        print()
        print("Speedup over OMB, the repetitions split by the machine's mode around the two launches compared")
        print("(median, range, number of repetitions):")
        print()
        split_columns = [c for c in columns if c != "fabricprobe median"]
        print("| test | size | " + " | ".join(f"{c}: same mode | {c}: modes differ" for c in split_columns) + " |")
        print("|---" * (2 * len(split_columns) + 2) + "|")
        for bench, label in (("allreduce", "allreduce float sum"), ("latency", "latency (half round trip)")):
            for size in args.sizes:
                cells = []
                for c in split_columns:
                    for split in ("same mode", "modes differ"):
                        got_ratios = by_mode.get((bench, size, c, split), [])
                        cells.append(f"{summary(got_ratios)} [{len(got_ratios)}]" if got_ratios else "-")
                print(f"| {label} | {size} | " + " | ".join(cells) + " |")
        print()
        print("Each tool's launches pooled by mode: the median of its launches that ran fast throughout,")
        print("[how many], and OMB's fast median over it (the speedup, from launches in one mode only):")
        print()
        print("| test | size | OMB fast µs | " + " | ".join(f"{c} fast µs | {c} vs OMB" for c in split_columns) + " |")
        print("|---" * (2 * len(split_columns) + 3) + "|")
        for bench, label in (("allreduce", "allreduce float sum"), ("latency", "latency (half round trip)")):
            for size in args.sizes:
                ref = pooled.get((bench, size, "OMB", "fast"), [])
                cells = [f"{statistics.median(ref):.2f} [{len(ref)}]" if ref else "-"]
                for c in split_columns:
                    mine = pooled.get((bench, size, c, "fast"), [])
                    cells.append(f"{statistics.median(mine):.2f} [{len(mine)}]" if mine else "-")
                    cells.append(f"{statistics.median(ref) / statistics.median(mine):.2f}" if mine and ref else "-")
                print(f"| {label} | {size} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
