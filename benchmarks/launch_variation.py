"""Launch-to-launch variation (docs/methodology.md, "Between launches"): `sweep --launches K` of the
library's allreduce, and per size the median over launches, the launch medians' range, the spread between
launches (half the 95% interval of the median of the launch medians, relative) against the spread within
one launch (the median of the launches' own 95% half-widths).

    python benchmarks/launch_variation.py -n 2 --launches 10 -o /tmp/lv2.h5
    python benchmarks/launch_variation.py --table /tmp/lv2.h5      # the table again, from the file

Extra sweep options go after `--` (e.g. `-- --mpiexec-args --oversubscribe`). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from fabricprobe.report.launches import group_json, groups
from fabricprobe.store import load_runs


def table(path: str) -> str:
    lines = []
    for runs in groups(load_runs(path)):
        group, prov = group_json(runs), runs[0].attrs
        lines += [
            f"{prov.get('mpi_vendor')} {prov.get('mpi_version')}, {prov.get('nranks')} ranks on "
            f"{prov.get('topology')}, {len(group['runs'])} launches (group {group['group']}, seeds "
            f"{group['seeds'][0]}…{group['seeds'][-1]}), {prov.get('cores_per_node')} cores",
            "",
            "| size | median of launch medians µs | launch medians µs (min–max) | between ± | within ± "
            "| between / within |",
            "|---|---|---|---|---|---|",
        ]
        for p in group["points"]:
            meds = p["launch_medians_s"]
            ratio = p["between_rel"] / p["within_rel"] if p["within_rel"] > 0 else float("inf")
            lines.append(
                f"| {p['bytes']} | {p['median_s'] * 1e6:.2f} | {min(meds) * 1e6:.2f}–{max(meds) * 1e6:.2f} | "
                f"{100 * p['between_rel']:.1f}% | {100 * p['within_rel']:.2f}% | "
                + ("> 100" if ratio > 100 else f"{ratio:.1f}")
                + " |"
            )
        wider = sum(1 for p in group["points"] if p["between_rel"] > p["within_rel"])
        lines += ["", f"between > within at {wider} of {len(group['points'])} sizes", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=2)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("-o", "--output", default="launch_variation.h5")
    ap.add_argument("--table", metavar="FILE", help="only print the table of FILE's launch groups")
    ap.add_argument("extra", nargs="*", help="more sweep options (after --)")
    args = ap.parse_args()
    if args.table:
        print(table(args.table))
        return
    argv = [sys.executable, "-m", "fabricprobe", "sweep", "--launches", str(args.launches), "-n", str(args.n)]
    argv += ["-o", args.output, "--collectives", "allreduce", "-b", "8", "-e", "4M", "-f", "4", "--quiet"]
    argv += args.extra
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"sweep --launches failed ({done.returncode}): {done.stderr[-2000:]}")
    print(table(args.output))


if __name__ == "__main__":
    main()
