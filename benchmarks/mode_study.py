"""Barrier against window against loop mode (docs/methodology.md, "Timing without a barrier's skew"):
the library's allreduce at 8 B–4 MiB, the three modes in one sweep per launch, their blocks in a random
order (so the modes interleave), K launches; per size the barrier-mode median and, per launch, the
window/barrier and loop/barrier ratios, as the median and range over the launches.

    python benchmarks/mode_study.py -n 2 --launches 3 -o /tmp/modes2.h5
    python benchmarks/mode_study.py --table /tmp/modes2.h5

Run it with the Python of the wheel to measure (its mpiexec is found as sweep --launches finds it).
MPICH oversubscribed: set MPIR_CVAR_COLL_SHM_LIMIT_PER_NODE=0 first (its shared-memory collectives spin
otherwise: 8.0 ms a call at 4 ranks on 2 cores; fabricprobe/mpienv/spinning.py), with
MPIR_CVAR_POLLS_BEFORE_YIELD=1 MPIR_CVAR_POSIX_POLL_FREQUENCY=1 as docs/data/mode_study.md records.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys

from fabricprobe.store import load_runs

SIZES = "8,64,512,4K,32K,256K,1M,4M"


def table(path: str) -> str:
    runs = load_runs(path)
    prov = runs[0].attrs
    sync = [r.attrs.get("clock_sync") or {} for r in runs]
    worst = max(abs(x) for s in sync for x in (s.get("residual_at_end_s") or [0.0]))
    lines = [
        f"{prov['mpi_vendor']} {prov['mpi_version']}, {prov['nranks']} ranks, {len(runs)} launches; clock-sync "
        f"residual at the end of a launch up to {worst * 1e6:.2f} µs",
        "",
        "| size | barrier µs (median, range) | window / barrier | loop / barrier | windows missed |",
        "|---|---|---|---|---|",
    ]
    by = {}
    for k, run in enumerate(runs):
        for p in run.points:
            if p["collective"] == "allreduce" and p["status"] in ("ok", "not_runnable"):
                by[(p["bytes"], p["mode"], k)] = p
    sizes = sorted({b for b, _, _ in by})
    ks = range(len(runs))

    def spread(values: list[float], fmt: str) -> str:
        return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})" if values else "-"

    for size in sizes:
        barrier = [
            by[(size, "barrier", k)]["median_s"] * 1e6
            for k in ks
            if (size, "barrier", k) in by and by[(size, "barrier", k)]["status"] == "ok"
        ]
        ratio = {
            mode: [
                by[(size, mode, k)]["median_s"] / by[(size, "barrier", k)]["median_s"]
                for k in ks
                if (size, mode, k) in by
                and (size, "barrier", k) in by
                and by[(size, mode, k)]["status"] == by[(size, "barrier", k)]["status"] == "ok"
                and math.isfinite(by[(size, mode, k)]["median_s"])
            ]
            for mode in ("window", "loop")
        }
        missed = [
            f"{by[(size, 'window', k)]['windows_missed']}/{by[(size, 'window', k)]['iterations']}"
            for k in ks
            if (size, "window", k) in by
        ]
        lines.append(
            f"| {size} | {spread(barrier, '.3g')} | {spread(ratio['window'], '.2f')} | "
            f"{spread(ratio['loop'], '.2f')} | {', '.join(missed)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=2)
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("-o", "--output", default="modes.h5")
    ap.add_argument("--table", metavar="FILE")
    args = ap.parse_args()
    if args.table:
        print(table(args.table))
        return
    argv = [sys.executable, "-m", "fabricprobe", "sweep", "--launches", str(args.launches), "-n", str(args.n)]
    argv += ["-o", args.output, "--collectives", "allreduce", "--sizes", SIZES, "--mode", "barrier,window,loop"]
    argv += ["--max-time", "0.3", "--no-bound-probe", "--quiet"]
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"sweep --launches failed ({done.returncode}): {done.stderr[-2000:]}")
    print(table(args.output))


if __name__ == "__main__":
    main()
