"""The % of bound tables of benchmarks/bound_study.sh, from its OUT_DIR/{node,lab}.h5:

    python benchmarks/bound_table.py OUT_DIR

per run: the bound's parameters (report/bound.py), % of bound per size and allreduce algorithm, and the
rows furthest from their bound."""

import sys

from fabricprobe.report.bound import bound_of, describe, fabric_of, furthest
from fabricprobe.sizes import format_size
from fabricprobe.store import load_runs

out = sys.argv[1]
for name in ("node", "lab"):
    (run,) = load_runs(f"{out}/{name}.h5")
    fabric = fabric_of(run)
    rows = [p for p in run.points if p["collective"] == "allreduce" and p["status"] == "ok"]
    algs = sorted({p["algorithm"] for p in rows}, key=lambda a: (a != "library", a))
    sizes = sorted({p["bytes"] for p in rows})
    print(
        f"### {run.attrs['nranks']} ranks on {run.attrs['topology']}"
        + (f", {run.attrs['lab']}" if run.attrs.get("lab") else "")
    )
    print(f"\nbound: {describe(fabric)}\n")
    print("| size | " + " | ".join(algs) + " |")
    print("|---|" + "---|" * len(algs))
    for size in sizes:
        cells = []
        for a in algs:
            p = next((p for p in rows if p["algorithm"] == a and p["bytes"] == size), None)
            b = bound_of(p, fabric) if p else None
            cells.append(f"{b.percent_of(p['median_s']):.0f}%" if b else "-")
        print(f"| {format_size(size)} | " + " | ".join(cells) + " |")
    far = furthest(run, ["allreduce"])
    print(
        "\nfurthest from their bound: "
        + "; ".join(f"{p['algorithm']} {format_size(p['bytes'])} at {pct:.0f}%" for p, pct in far)
        + "\n"
    )
