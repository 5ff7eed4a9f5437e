"""Each variant against one base, paired within repetitions.

    python benchmarks/paired_ratios.py REPS BASE [OLD=NEW ...]

REPS (a file, or - for standard input) holds lines "rep K name=µs name=µs ..." (omb_4mib_first.sh,
omb_4mib_host.sh; docs/data/launch_modes.md); other lines are skipped, so sets of one script pasted
one after another pool. OLD=NEW renames a variant (two scripts' names for the same process).

Launches on this machine swing 20-40% with the moment they run in, so a variant is judged by the ratio
base/variant inside each repetition, where the two launches ran seconds apart: the variant's median µs,
the ratio's median (q1-q3), in how many repetitions the variant read faster, and the exact two-sided
sign test's p for that count (no assumption about the ratios' spread). Above 1, the variant read faster.
"""

from __future__ import annotations

import math
import re
import statistics
import sys


def sign_test(wins: int, n: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven when either is as likely."""
    tail = sum(math.comb(n, k) for k in range(max(wins, n - wins), n + 1)) / 2**n
    return min(1.0, 2 * tail)


def repetitions(lines, alias: dict[str, str] | None = None) -> list[tuple[str, dict[str, float]]]:
    """(K, {name: µs}) for each line "rep K name=µs ..." (4mib-pingpong/frames_vs_time.py reads them too)."""
    alias = alias or {}
    return [
        (x.split()[1], {alias.get(k, k): float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", x)})
        for x in lines
        if x.startswith("rep ")
    ]


def main() -> None:
    path, base, *renames = sys.argv[1:]
    alias = dict(r.split("=", 1) for r in renames)
    reps = [r for _, r in repetitions(sys.stdin if path == "-" else open(path), alias) if base in r]
    names = list(dict.fromkeys(k for r in reps for k in r if k != base))
    for name in names:
        ratios = [r[base] / r[name] for r in reps if name in r]
        if len(ratios) < 2:
            continue
        q1, median, q3 = statistics.quantiles(ratios, n=4)
        faster = sum(x > 1 for x in ratios)
        p = sign_test(faster, len(ratios))
        us = statistics.median(r[name] for r in reps if name in r)
        spread = f"{median:.3f} ({q1:.2f}-{q3:.2f})"
        print(f"{base}/{name:10s} {us:6.1f} us  {spread}  faster in {faster}/{len(ratios)}  sign test p={p:.3f}")


if __name__ == "__main__":
    main()
