"""docs/tuning.md: the table of benchmarks/budget_study.py's rows (one or more OUT/NAME-budget.jsonl).

    python benchmarks/budget_table.py OUT/*-budget.jsonl

Per setup: the exhaustive one launch's wall time (median, range), each live budgeted run's wall time as
a fraction of the exhaustive run measured next to it (range over the repetitions), its measurement
time fraction, and its regret against each exhaustive file (mean and p95 with tune-eval's bootstrap
95% intervals; one row per pair, never merged into one figure)."""

from __future__ import annotations

import json
import statistics
import sys


def pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def interval(triple) -> str:
    value, low, high = triple
    return f"{pct(value)} [{pct(low)}, {pct(high)}]"


def main(paths: list[str]) -> None:
    print("| setup | tuned from | wall | wall / exhaustive (same rep) | measurement time | mean regret | p95 regret |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for path in paths:
        rows = [json.loads(line) for line in open(path) if line.strip()]
        runs = [r for r in rows if r["kind"] in ("exhaustive", "budget")]
        name = runs[0]["name"]
        ex = {r["rep"]: r for r in runs if r["kind"] == "exhaustive"}
        walls = [r["wall_s"] for r in ex.values()]
        print(
            f"| {name} | exhaustive, one launch ({len(walls)} runs) | {statistics.median(walls):.0f} s "
            f"({min(walls):.0f}-{max(walls):.0f}) | 100% | 100% | | |"
        )
        for ev in (r for r in rows if r["kind"] == "eval"):
            truth = next(r for r in ex.values() if r["file"] == ev["truth"])
            for row in ev["rows"]:
                if row["source"] in ("exhaustive",) or row["source"].startswith("replay"):
                    label = row["source"] if row["source"] != "exhaustive" else "exhaustive on itself"
                    wall = ""
                else:
                    b = next(r for r in runs if r["file"] == row["source"])
                    label = f"live --budget, rep {b['rep']} ({b['summary']})"
                    wall = f"{b['wall_s']:.0f} s"
                    label += f" vs exhaustive rep {truth['rep']}"
                ratio = pct(row["wall"]) if row.get("wall") is not None and wall else ""
                if wall:
                    ratio = f"{pct(b['wall_s'] / truth['wall_s'])}"
                print(
                    f"| {name} | {label} | {wall} | {ratio} | {pct(row['measurement'])} | "
                    f"{interval(row['regret']['mean'])} | {interval(row['regret']['p95'])} |"
                )


if __name__ == "__main__":
    main(sys.argv[1:])
