"""Is a launch-to-launch difference a setting's? Launch OMB's osu_allreduce K times under each of
several settings, interleaved (launch i of every setting, then launch i + 1), and print each
setting's launch medians: their median, range and spread, side by side.

    python docs/studies/2026-11-27-4mib-pingpong/launch_modes.py --omb OMB_MPI_DIR --launches 10 \\
        --setting default= --setting aslr-off='setarch x86_64 -R' [--sizes 8,1048576] [--json OUT]

A setting is NAME=PREFIX: PREFIX (possibly empty) runs each rank's program, after `mpiexec -n N`;
NAME=@ENV=VALUE,ENV2=VALUE2 sets environment variables instead. docs/methodology.md, "Between launches",
found the Open MPI wheel at n = 2 bimodal by launch (2 of 10 launches fast at every size, 8 slow); the
question this answers is whether a setting removes the second mode.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
from pathlib import Path

from fabricprobe.mpienv.launcher import run_launch


def omb_allreduce(argv: list[str], env: dict[str, str]) -> dict[int, float]:
    """size -> OMB's Avg Latency (µs) of one launch."""
    out = run_launch(argv, env=env, timeout=600)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(argv)}\n{out.stderr[-2000:]}")
    got = {}
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and not line.startswith("#"):
            try:
                got[int(fields[0])] = float(fields[1])
            except ValueError:
                continue
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--omb", type=Path, required=True, help="OMB's libexec/osu-micro-benchmarks/mpi")
    parser.add_argument("--mpiexec", default=str(Path(sys.executable).parent / "mpiexec"))
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--launches", type=int, default=10)
    parser.add_argument("--sizes", default="8,1048576")
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--setting", action="append", required=True, help="NAME=PREFIX or NAME=@VAR=VALUE,...")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    binary = args.omb / "collective" / "osu_allreduce"
    if not os.access(binary, os.X_OK):
        parser.exit(2, f"{parser.prog}: error: {binary} is not an executable (build OMB first)\n")
    sizes = [int(s) for s in args.sizes.split(",")]
    base = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    settings: dict[str, tuple[list[str], dict[str, str]]] = {}
    for item in args.setting:
        name, _, what = item.partition("=")
        if what.startswith("@"):
            env = dict(base, **dict(kv.split("=", 1) for kv in what[1:].split(",")))
            settings[name] = ([], env)
        else:
            settings[name] = (shlex.split(what), base)
    got: dict[str, dict[int, list[float]]] = {name: {s: [] for s in sizes} for name in settings}
    for i in range(args.launches):
        order = list(settings)[i % len(settings) :] + list(settings)[: i % len(settings)]
        for name in order:
            prefix, env = settings[name]
            for size in sizes:
                argv = [args.mpiexec, "-n", str(args.n), *prefix, str(binary), "-f", "-T", "mpi_float"]
                argv += ["-m", f"{size}:{size}", "-i", str(args.iters), "-x", str(args.iters // 10)]
                got[name][size].append(omb_allreduce(argv, env)[size])
        print(f"launch {i + 1}/{args.launches}", file=sys.stderr)
    print(f"osu_allreduce -f -T mpi_float, n = {args.n}, {args.launches} launches per setting, interleaved")
    print("| setting | size | median of launches µs | range µs | max / min | each launch µs |")
    print("|---|---|---|---|---|---|")
    for name in settings:
        for size in sizes:
            v = got[name][size]
            each = " ".join(f"{x:g}" for x in v)
            print(
                f"| {name} | {size} | {statistics.median(v):.2f} | {min(v):.2f}–{max(v):.2f} | "
                f"{max(v) / min(v):.2f} | {each} |"
            )
    if args.json:
        args.json.write_text(json.dumps({"settings": args.setting, "n": args.n, "results": got}, indent=1))


if __name__ == "__main__":
    main()
