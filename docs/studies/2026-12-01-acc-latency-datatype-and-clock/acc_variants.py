"""osu_acc_latency of several OMB 7.4 builds beside fabricprobe's acc_latency, n = 2, interleaved (the
order turned each repetition): OMB's Avg over fabricprobe's osu_avg_s, median (range) per size.

    python acc_variants.py LABEL=OMB_MPI_DIR ... --reps 5 --iters 10000 --warmup 1000

(OMB_MPI_DIR: a build's libexec/osu-micro-benchmarks/mpi, as build_variants.sh makes them; the
options are benchmarks/omb_vector_side_by_side.py's, whose runs of each tool this reuses.)"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import omb_vector_side_by_side as side  # noqa: E402

side.VECTORS = ()
side.OMB_TESTS = {"acc_latency": "one-sided/osu_acc_latency"}


def main() -> None:
    builds = [a.split("=", 1) for a in sys.argv[1:] if "=" in a and not a.startswith("-")]
    rest = [a for a in sys.argv[1:] if not ("=" in a and not a.startswith("-"))]
    args = side.side_by_side_parser(__doc__).parse_args(["--omb", builds[0][1], "-n", "2", *rest])
    launch = [args.mpiexec, *args.mpiexec_args.split(), "-n", "2"]
    ratios = {name: {s: [] for s in side.SIZES} for name, _ in builds}
    mine = {s: [] for s in side.SIZES}
    with tempfile.TemporaryDirectory() as work:
        for rep in range(args.reps):
            order = [*builds, ("fabricprobe", None)]
            order = order[rep % len(order) :] + order[: rep % len(order)]
            got = {}
            for name, where in order:
                if where is None:
                    got[name] = side.fabricprobe(args, launch, dict(os.environ), work)["acc_latency"]
                else:
                    args.omb = Path(where)
                    got[name] = side.omb(args, launch, dict(os.environ))["acc_latency"]
            for s in side.SIZES:
                mine[s].append(got["fabricprobe"][s]["osu_avg_s"] * 1e6)
                for name, _ in builds:
                    ratios[name][s].append(got[name][s] / mine[s][-1])
    print(f"n = 2, {args.reps} repetitions, {args.iters} iterations ({args.warmup} warm-up)")
    print("fabricprobe µs", {s: f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})" for s, v in mine.items()})
    for name, _ in builds:
        print(name, {s: f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for s, v in ratios[name].items()})


if __name__ == "__main__":
    main()
