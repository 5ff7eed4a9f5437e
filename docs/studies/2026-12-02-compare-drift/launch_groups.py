"""Launch groups instead of single launches: the file's launches (8) split into two halves (every split
that keeps the first in A: 35 for 8), a row called different when the groups' launch-median ranges do not overlap; the
power: group B's medians multiplied by 1.10 or 1.30 (a planted slowdown)."""

import itertools
import sys

from fabricprobe.store import load_runs
from fabricprobe.store.schema import EMPTY

CONTROLS = {"latency", "bw", "copy_local", EMPTY}

for path in sys.argv[1:]:
    runs = load_runs(path)
    med = {}
    for k, run in enumerate(runs):
        for p in run.points:
            if p["status"] == "ok" and p["collective"] not in CONTROLS:
                key = (p["collective"], p["bytes"], p.get("dtype"), p.get("op"))
                med.setdefault(key, [None] * len(runs))[k] = p["median_s"]
    rowsx = [v for v in med.values() if None not in v]
    res = {1.0: [0, 0], 1.1: [0, 0], 1.3: [0, 0]}
    n = len(runs)
    splits = [a for a in itertools.combinations(range(n), n // 2) if 0 in a]
    for a in splits:
        b = [k for k in range(n) if k not in a]
        for v in rowsx:
            A = [v[k] for k in a]
            for f in res:
                B = [v[k] * f for k in b]
                hit = max(A) < min(B) or max(B) < min(A)
                res[f][0] += hit
                res[f][1] += 1
    print(f"{path}: {len(rowsx)} rows x {len(splits)} splits")
    for f, (h, n) in res.items():
        print(f"  B slowed x{f:.2f}: called different {h} of {n} ({100 * h / n:.1f}%)")
