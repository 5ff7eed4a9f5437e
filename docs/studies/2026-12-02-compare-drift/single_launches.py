"""Two launches of one sweep compared, every pair of the file's launches (8: 28 pairs): how many rows
each rule calls different. Rules: today's (CIs apart and beyond both sides' noise); drift from control
rows at the same size (the tests no tuning file touches: latency, bw, copy_local) added to the noise;
a global floor F."""

import itertools
import math
import sys

from fabricprobe.report.compare import compare, parse_side
from fabricprobe.stats import point_noise
from fabricprobe.store import count_runs

CONTROLS = {"latency", "bw", "copy_local"}


def rows(path, i, j):
    a, b = parse_side(f"{path}:{i}", one_launch=True), parse_side(f"{path}:{j}", one_launch=True)
    return compare(a, b).rows


def drift_by_size(rs):
    out = {}
    for r in rs:
        if r.key["collective"] in CONTROLS and math.isfinite(r.speedup):
            size = r.key["bytes"]
            out[size] = max(out.get(size, 0.0), abs(math.log(r.speedup)))
    return out


def called(r, drift, floor):
    noise = max(point_noise(r.a), point_noise(r.b))
    d = abs(math.log(r.speedup))
    return r.significant and d > math.log1p(noise) + max(drift, floor)


for path in sys.argv[1:]:
    tally = {"today": [0, 0], "controls": [0, 0], "floor 10%": [0, 0], "floor 20%": [0, 0], "ctrl+5%": [0, 0]}
    worst = []
    pairs = list(itertools.combinations(range(1, count_runs(path) + 1), 2))
    for i, j in pairs:
        rs = rows(path, i, j)
        drift = drift_by_size(rs)
        subject = [r for r in rs if r.key["collective"] not in CONTROLS and math.isfinite(r.speedup)]
        for r in subject:
            dr = drift.get(r.key["bytes"])
            if dr is None:  # nearest control size
                near = min(drift, key=lambda s: abs(math.log2(max(s, 1)) - math.log2(max(r.key["bytes"], 1))))
                dr = drift[near]
            worst.append(abs(math.log(r.speedup)))
            for name, hit in (
                ("today", r.significant),
                ("controls", called(r, dr, 0.0)),
                ("floor 10%", called(r, 0.0, math.log(1.10))),
                ("floor 20%", called(r, 0.0, math.log(1.20))),
                ("ctrl+5%", called(r, dr, math.log(1.05))),
            ):
                tally[name][0] += hit
                tally[name][1] += 1
    worst.sort()
    qs = [math.exp(worst[int(f * (len(worst) - 1))]) for f in (0.5, 0.9, 0.95, 1.0)]
    print(
        f"{path}: {len(pairs)} pairs, {tally['today'][1]} subject rows (allreduce, bcast); |ratio| quantiles "
        f"50% {qs[0]:.3f} 90% {qs[1]:.3f} 95% {qs[2]:.3f} max {qs[3]:.3f}"
    )
    for name, (hit, n) in tally.items():
        print(f"  {name:<10} called different: {hit:4d} of {n} ({100 * hit / n:.1f}%)")
