"""How often `compare` calls a difference where there is none, and finds one that is planted, on the
launches of one sweep (`sweep --launches N`): docs/reports.md, "What compare calls different".

    python benchmarks/compare_drift.py FILE [--subject allreduce,bcast] [--per-side 4,8]

Single launches: each launch against the next (N − 1 comparisons). Launch groups of K: consecutive
blocks of K launches against the next K (two sweeps run one after the other), and the odd against the
even launches of 2K consecutive ones (two sweeps interleaved launch by launch). Each comparison is made
as measured (false positives: the share of rows called different) and with side B's times of the
subject collectives multiplied by 1.10 and 1.30 (a planted slowdown: the share of rows found). The
rows are those of --subject; the rule is the one `compare` uses (report/compare.py).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from fabricprobe.report.compare import Side, compare
from fabricprobe.report.launches import group_of
from fabricprobe.store import load_runs

TIMES = ("median_s", "ci_low_s", "ci_high_s")
FACTORS = (1.0, 1.10, 1.30)


@dataclass
class Planted(Side):
    """A side whose subject collectives take `factor` times as long."""

    factor: float = 1.0
    subject: tuple[str, ...] = ()

    def points(self, collectives=None):
        out = []
        for p in super().points(collectives):
            if p["collective"] in self.subject and self.factor != 1.0:
                p = dict(p, **{k: p[k] * self.factor for k in TIMES})
                if "launch_medians_s" in p:
                    p["launch_medians_s"] = [m * self.factor for m in p["launch_medians_s"]]
            out.append(p)
        return out


def share(a_runs, b_runs, factor, subject) -> tuple[int, int]:
    """(rows called different, rows) of the subject collectives, B planted `factor` slower."""
    a = Side("A", a_runs[0], None, a_runs if len(a_runs) > 1 else [])
    b = Planted("B", b_runs[0], None, b_runs if len(b_runs) > 1 else [], factor, subject)
    rows = [r for r in compare(a, b, list(subject)).rows]
    return sum(r.significant for r in rows), len(rows)


def tally(pairs, subject) -> str:
    cells = []
    for f in FACTORS:
        hit = total = 0
        for a, b in pairs:
            h, n = share(a, b, f, subject)
            hit, total = hit + h, total + n
        cells.append(f"{100 * hit / max(total, 1):5.1f}%")
    return " | ".join(cells) + f" | {len(pairs)} comparisons"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--subject", default="allreduce,bcast")
    parser.add_argument("--per-side", default="4,8", help="launches a side of the launch groups")
    args = parser.parse_args()
    subject = tuple(args.subject.split(","))
    runs = load_runs(args.file)
    launches = group_of(runs, runs[0])
    n = len(launches)
    print(f"{args.file}: {n} launches; rows of {', '.join(subject)}; B × {', '.join(f'{f:.2f}' for f in FACTORS)}")
    print(f"| sides | {' | '.join(f'B × {f:.2f}' for f in FACTORS)} | |")
    print("|---|--:|--:|--:|---|")
    singles = [([launches[i]], [launches[i + 1]]) for i in range(n - 1)]
    print(f"| single launches (each against the next) | {tally(singles, subject)} |")
    for k in (int(x) for x in args.per_side.split(",")):
        blocks = [(launches[s : s + k], launches[s + k : s + 2 * k]) for s in range(0, n - 2 * k + 1)]
        alternate = [(launches[s : s + 2 * k : 2], launches[s + 1 : s + 2 * k : 2]) for s in range(0, n - 2 * k + 1)]
        if blocks:
            print(f"| {k} + {k} launches, one sweep after the other | {tally(blocks, subject)} |")
            print(f"| {k} + {k} launches, interleaved | {tally(alternate, subject)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
