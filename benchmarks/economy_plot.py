"""docs/tuning.md's regret table and plot from `fabricprobe tune-eval --json` files, one per setup:

    python benchmarks/economy_plot.py docs/data/economy_*.json --table
    python benchmarks/economy_plot.py docs/data/economy_*.json --plot docs/img/economy_regret.png

The table has one row per tuning (the exhaustive on itself, each live budgeted sweep, each replayed
budget); the plot draws mean and p95 regret (bootstrap 95% intervals as bars) against the fraction of
the exhaustive measurement time each replay spent, one line per setup."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _ci(v) -> str:
    value, low, high = v
    return f"{value:.1%} [{low:.1%}, {high:.1%}]"


def _frac(v) -> str:
    return "" if v is None else f"{v:.0%}"


def table(files: list[Path]) -> str:
    lines = [
        "| setup | tuned from | points | measurement time | wall time | mean regret | p95 regret | max regret |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for f in files:
        for row in json.loads(f.read_text()):
            source = row["source"] if not row["source"].endswith(".h5") else f"live `{Path(row['source']).name}`"
            lines.append(
                f"| {f.stem.removeprefix('economy_')} | {source} | {_frac(row['points'])} | "
                f"{_frac(row['measurement'])} | {_frac(row['wall'])} | {_ci(row['regret']['mean'])} | "
                f"{_ci(row['regret']['p95'])} | {_ci(row['regret']['max'])} |"
            )
    return "\n".join(lines)


def plot(files: list[Path], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for f in files:
        rows = [r for r in json.loads(f.read_text()) if r["source"].startswith("replay at")]
        rows.sort(key=lambda r: r["measurement"])
        x = [r["measurement"] for r in rows]
        for ax, stat in zip(axes, ("mean", "p95")):
            v = [r["regret"][stat][0] * 100 for r in rows]
            lo = [max(0.0, (r["regret"][stat][0] - r["regret"][stat][1]) * 100) for r in rows]
            hi = [max(0.0, (r["regret"][stat][2] - r["regret"][stat][0]) * 100) for r in rows]
            ax.errorbar(x, v, yerr=[lo, hi], marker="o", capsize=3, label=f.stem.removeprefix("economy_"))
    for ax, stat in zip(axes, ("mean", "p95")):
        ax.set_xlabel("fraction of the exhaustive measurement time spent")
        ax.set_ylabel(f"{stat} regret, % (95% bootstrap interval)")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(bottom=0)
        ax.axhline({"mean": 2, "p95": 10}[stat], color="grey", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("tune-sweep --budget replayed on exhaustive tune-sweeps (dotted: the issue's targets)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--plot", type=Path)
    args = ap.parse_args()
    if args.table:
        print(table(args.files))
    if args.plot:
        plot(args.files, args.plot)


if __name__ == "__main__":
    main()
