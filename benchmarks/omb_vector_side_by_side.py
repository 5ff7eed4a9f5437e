"""The vector collectives in OMB's even layout, and accumulate, beside OSU Micro-Benchmarks 7.4's own
binaries, interleaved; and, from the same fabricprobe runs, what the uneven layout adds.

    python benchmarks/omb_vector_side_by_side.py --omb OMB_MPI_DIR [-n 2] [--reps 5] [--json OUT]

OMB_MPI_DIR is an OMB 7.4 build's `libexec/osu-micro-benchmarks/mpi` built against the MPI that runs
fabricprobe (see omb_imb_side_by_side.py). Each repetition runs, in an order that alternates, OMB's
osu_gatherv, osu_scatterv, osu_allgatherv, osu_alltoallv (-T mpi_float) and osu_acc_latency, and one
fabricprobe sweep of gatherv_even, scatterv_even, allgatherv_even, alltoallv_even, their uneven forms
(float32) and acc_latency (native timer, barrier mode for the collectives, the same iteration counts),
so a slow phase of the machine hits both tools alike. OMB's one-sided tests run on exactly two
processes, so at n > 2 accumulate is left out.

Compared per size within each repetition, then as the median and range over the repetitions:
- OMB's Avg over fabricprobe's osu_avg_s for the even forms and accumulate (the same statistic: the
  mean over ranks of each rank's mean; 1 is agreement, above 1 fabricprobe reads faster);
- fabricprobe's uneven form over its even form at the same mean block (medians; above 1 the uneven,
  gapped, reverse-ordered layout costs more). OMB's Size is the block for the vector tests.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from omb_nbc_side_by_side import rows, run, side_by_side_parser, summary  # beside this file

SIZES = [8, 1024, 65536, 1 << 20]
VECTORS = ("gatherv", "scatterv", "allgatherv", "alltoallv")
OMB_TESTS = {**{v: f"collective/osu_{v}" for v in VECTORS}, "acc_latency": "one-sided/osu_acc_latency"}


def tests(n: int) -> dict[str, str]:
    """The OMB tests that run on n processes (its one-sided tests need exactly two)."""
    return {name: binary for name, binary in OMB_TESTS.items() if n == 2 or name in VECTORS}


def omb(args, launch, env) -> dict[str, dict[int, float]]:
    common = ["-m", f"{min(SIZES)}:{max(SIZES)}", "-i", str(args.iters), "-x", str(args.warmup)]
    found = {}
    for name, binary in tests(args.n).items():
        typed = ["-T", "mpi_float"] if name in VECTORS else []
        found[name] = {s: v[0] for s, v in rows(run(launch + [str(args.omb / binary), *typed, *common], env)).items()}
    return {name: {s: v for s, v in got.items() if s in SIZES} for name, got in found.items()}


def fabricprobe(args, launch, env, workdir: str) -> dict[str, dict[int, dict]]:
    """collective -> OMB's size -> point, for the even and uneven forms and acc_latency."""
    path = os.path.join(workdir, "fp.h5")
    if os.path.exists(path):
        os.unlink(path)
    names = [*VECTORS, *(f"{v}_even" for v in VECTORS), *(["acc_latency"] if args.n == 2 else [])]
    sizes = sorted(set(SIZES) | {s * args.n for s in SIZES})  # a vector point's size is n blocks
    sweep = [sys.executable, "-m", "fabricprobe", "sweep", "-o", path, "--collectives", ",".join(names)]
    sweep += ["--sizes", ",".join(map(str, sizes)), "--dtypes", "float32", "--timer", "native"]
    sweep += ["--iters", str(args.iters), "--warmup", str(args.warmup), "--ci-target", "0"]
    sweep += ["--progress", "none", "--quiet", "--no-bound-probe"]
    run(launch + sweep, env)
    doc = json.loads(run([sys.executable, "-m", "fabricprobe", "report", path, "--format", "json"], env))
    out: dict[str, dict[int, dict]] = {name: {} for name in names}
    for p in doc["runs"][0]["points"]:
        if p["status"] != "ok" or p["collective"] not in out:
            continue
        vector = p["collective"] != "acc_latency"
        size = p["count"] * 4 if vector else p["bytes"]  # OMB's Size: the (mean) block
        if size in SIZES and vector == (p["requested_bytes"] == size * args.n):
            out[p["collective"]][size] = p
    return out


def main() -> None:
    parser = side_by_side_parser(__doc__)
    args = parser.parse_args()
    for binary in tests(args.n).values():
        if not os.access(args.omb / binary, os.X_OK):
            parser.exit(2, f"{parser.prog}: error: {args.omb / binary} is not an executable\n")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = [args.mpiexec, *args.mpiexec_args.split(), "-n", str(args.n)]
    lines = run([args.mpiexec, "--version"], env).splitlines()
    version = next((x.strip() for x in lines if "Open MPI" in x or "Version:" in x), lines[0] if lines else "?")
    against_omb = {name: {s: [] for s in SIZES} for name in OMB_TESTS}
    uneven_cost = {name: {s: [] for s in SIZES} for name in VECTORS}
    record = []
    with tempfile.TemporaryDirectory() as workdir:
        for rep in range(args.reps):
            got = {}
            for tool in ["omb", "fabricprobe"] if rep % 2 == 0 else ["fabricprobe", "omb"]:
                got[tool] = omb(args, launch, env) if tool == "omb" else fabricprobe(args, launch, env, workdir)
            o, f = got["omb"], got["fabricprobe"]
            for name in tests(args.n):
                mine = f[f"{name}_even" if name in VECTORS else name]
                for size in SIZES:
                    if size in o[name] and size in mine and mine[size]["osu_avg_s"] > 0:
                        against_omb[name][size].append(o[name][size] / (mine[size]["osu_avg_s"] * 1e6))
            for name in VECTORS:
                for size in SIZES:
                    even, uneven = f[f"{name}_even"].get(size), f[name].get(size)
                    if even and uneven and even["median_s"] > 0:
                        uneven_cost[name][size].append(uneven["median_s"] / even["median_s"])
            fields = ("osu_avg_s", "median_s", "count", "bytes")
            record.append(
                {
                    "omb": o,
                    "fabricprobe": {c: {s: {k: p[k] for k in fields} for s, p in v.items()} for c, v in f.items()},
                }
            )

    print(f"{version}; n = {args.n}; {args.reps} repetitions, {args.iters} iterations ({args.warmup} warm-up)")
    print("OMB Avg / fabricprobe osu_avg_s (even forms; acc_latency): median (range over repetitions)\n")
    shown = tests(args.n)
    print("| size | " + " | ".join(f"{n}_even" if n in VECTORS else n for n in shown) + " |")
    print("|---" * (len(shown) + 1) + "|")
    for size in SIZES:
        print(f"| {size} | " + " | ".join(summary(against_omb[n][size]) for n in shown) + " |")
    print("\nfabricprobe's uneven form / its even form (medians), per OMB size: median (range)\n")
    print("| size | " + " | ".join(VECTORS) + " |")
    print("|---" * (len(VECTORS) + 1) + "|")
    for size in SIZES:
        print(f"| {size} | " + " | ".join(summary(uneven_cost[n][size]) for n in VECTORS) + " |")
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
