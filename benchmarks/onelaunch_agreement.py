"""docs/tuning.md, "Tuning in one launch": what benchmarks/onelaunch_study.py measured.

    python benchmarks/onelaunch_agreement.py OUT/NAME.jsonl [--json docs/data/onelaunch_NAME.json]

1. Wall time: each method's median and range over the repetitions, its launch count, and the ratio
   launch / mpit of each interleaved pair (repetition r of both), as a range, never one headline.
2. Agreement of the medians: per (collective, algorithm, communicator size, size) the median of each
   method's medians over the repetitions, their ratio (mpit / launch), and beside it each method's
   repeat noise (its largest / smallest median over the repetitions): quantiles of all three, and the
   points whose ratio lies outside what repeating either method gives.
3. Decisions: `tune`'s choice (tuning.choose.rules) from every file, per (collective, communicator
   size, size): how often two files of different methods choose differently, against two files of the
   same method; each difference of the first pair listed with the two winners' times in both files and
   classed: tune's threshold (the same candidate faster in both files, but at least --min-gain faster
   than the default with intervals apart in one only), a near tie (the order swapped, the winners closer
   in both files than either's repeat noise at that point) or outside the repeat noise (explained one
   by one in docs/tuning.md)."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
from pathlib import Path

from fabricprobe.store import load_runs
from fabricprobe.tuning.choose.rules import choose


def medians(path: str) -> dict[tuple, float]:
    """(collective, algorithm, nranks, bytes) -> median_s of the newest ok point."""
    out = {}
    for run in load_runs(path):
        for p in run.points:
            if p["status"] == "ok" and p["collective"] != "empty" and p["mode"] == "barrier":
                out[(p["collective"], p["algorithm"], p["nranks"], p["bytes"])] = p["median_s"]
    return out


def winners(path: str) -> dict[tuple, str]:
    table = choose(load_runs(path))
    return {
        (coll, n, d.size): d.winner
        for coll, sections in table.rules.items()
        for n, ranges in sections.items()
        for r in ranges
        for d in r.decisions
    }


def quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if not values:
        return {}
    pick = lambda q: values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]  # noqa: E731
    return {"p5": pick(0.05), "p25": pick(0.25), "median": pick(0.5), "p75": pick(0.75), "p95": pick(0.95)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    by = {m: sorted((r for r in rows if r["method"] == m), key=lambda r: r["rep"]) for m in ("mpit", "launch")}
    report: dict = {"name": rows[0]["name"], "n": rows[0]["n"], "args": rows[0]["args"], "wall": {}}

    print(f"# {rows[0]['name']}: tune-sweep -n {rows[0]['n']} {' '.join(rows[0]['args'])}")
    for m, rs in by.items():
        walls = [r["wall_s"] for r in rs]
        report["wall"][m] = {
            "median_s": statistics.median(walls),
            "range_s": [min(walls), max(walls)],
            "launches": sorted({r["launches"] for r in rs}),
            "measured_s": [r["measured_s"] for r in rs],
            "summary": sorted({r["summary"] or "" for r in rs}),
        }
        print(
            f"{m:7s} wall {statistics.median(walls):8.1f} s (range {min(walls):.1f}-{max(walls):.1f}, "
            f"{len(walls)} reps), launches {report['wall'][m]['launches']}, measured "
            f"{statistics.median(r['measured_s'] for r in rs):.1f} s"
        )
    pairs = [(a, b) for a in by["launch"] for b in by["mpit"] if a["rep"] == b["rep"]]
    ratios = sorted(a["wall_s"] / b["wall_s"] for a, b in pairs)
    report["wall_ratio_launch_over_mpit"] = ratios
    print(f"wall time launch / mpit per interleaved pair: {', '.join(f'{x:.2f}' for x in ratios)}")

    files = {m: [medians(r["file"]) for r in rs] for m, rs in by.items()}
    keys = set.intersection(*(set(f) for fs in files.values() for f in fs))
    agreement, noise = [], {m: [] for m in files}
    outside = []
    spread_of: dict[tuple, float] = {}
    for key in sorted(keys):
        per = {m: [f[key] for f in fs] for m, fs in files.items()}
        ratio = statistics.median(per["mpit"]) / statistics.median(per["launch"])
        agreement.append(ratio)
        spreads = {m: max(v) / min(v) for m, v in per.items()}
        spread_of[key] = max(spreads.values())
        for m, s in spreads.items():
            noise[m].append(s)
        if max(ratio, 1 / ratio) > max(spreads.values()):
            outside.append((key, ratio, spreads))
    report["points"] = len(keys)
    report["ratio_mpit_over_launch"] = quantiles(agreement)
    report["repeat_noise"] = {m: quantiles(v) for m, v in noise.items()}
    report["outside_noise"] = len(outside)
    fmt = lambda q: " ".join(f"{k} {v:.2f}" for k, v in q.items())  # noqa: E731
    print(f"\n{len(keys)} points measured by every file")
    print(f"median ratio mpit / launch:      {fmt(report['ratio_mpit_over_launch'])}")
    for m, q in report["repeat_noise"].items():
        print(f"repeat noise of {m:7s} (max/min): {fmt(q)}")
    print(f"points whose ratio exceeds both methods' repeat noise: {len(outside)} of {len(keys)}")
    for key, ratio, spreads in sorted(outside, key=lambda o: -abs(math.log(o[1])))[:10]:
        print(f"  {key}: {ratio:.2f} (noise mpit {spreads['mpit']:.2f}, launch {spreads['launch']:.2f})")

    chosen = {m: [winners(r["file"]) for r in rs] for m, rs in by.items()}
    decided = set.intersection(*(set(w) for ws in chosen.values() for w in ws))

    def differ(a: dict, b: dict) -> int:
        return sum(a[k] != b[k] for k in decided)

    across = [differ(a, b) for a in chosen["mpit"] for b in chosen["launch"]]
    within = {m: [differ(a, b) for a, b in itertools.combinations(ws, 2)] for m, ws in chosen.items()}
    report["decisions"] = {"points": len(decided), "across_methods": across, "within": within}
    print(f"\ndecisions at {len(decided)} points; differing between a mpit and a launch file: {across}")
    for m, w in within.items():
        print(f"  between two {m} files: {w}")
    first = {m: ws[0] for m, ws in chosen.items()}
    diffs = []
    for k in sorted(decided):
        if first["mpit"][k] != first["launch"][k]:
            coll, n, size = k
            pair = {first["mpit"][k], first["launch"][k]}
            keys_of = {w: (coll, "library" if w == "default" else f"library:{w}", n, size) for w in pair}
            times = {
                f"{w} in {m}": f.get(keys_of[w])
                for m, f in (("mpit", files["mpit"][0]), ("launch", files["launch"][0]))
                for w in pair
            }
            # Why they differ. The same one of the two faster in both files: tune's test (at least
            # --min-gain faster than the default, intervals apart) passed in one file only. Else the order
            # swapped: a near tie when the winners are closer, in each file, than the repeat noise of either
            # at that point (repeating one method swaps them too); otherwise it needs its own explanation.
            noise_here = max((spread_of.get(key, math.inf) for key in keys_of.values()), default=math.inf)
            gaps, faster = [], set()
            for f in (files["mpit"][0], files["launch"][0]):
                a, b = (f.get(keys_of[w]) for w in sorted(pair))
                gaps.append(max(a / b, b / a) if a and b else math.inf)
                faster.add(sorted(pair)[0] if a and b and a < b else sorted(pair)[1])
            if len(faster) == 1:
                why = "tune's threshold"
            else:
                why = "near tie" if max(gaps) <= noise_here else "outside the repeat noise"
            diffs.append(
                {
                    "point": k,
                    "mpit": first["mpit"][k],
                    "launch": first["launch"][k],
                    "times_s": times,
                    "gap": max(gaps),
                    "noise": noise_here,
                    "why": why,
                }
            )
            print(
                f"  {k}: mpit chose {first['mpit'][k]}, launch {first['launch'][k]}; gap {max(gaps):.2f} "
                f"against repeat noise {noise_here:.2f}: {why}; medians {times}"
            )
    classes = ("tune's threshold", "near tie", "outside the repeat noise")
    report["first_pair_why"] = {w: sum(d["why"] == w for d in diffs) for w in classes}
    print(f"  first pair: {report['first_pair_why']}")
    report["first_pair_differences"] = diffs
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
