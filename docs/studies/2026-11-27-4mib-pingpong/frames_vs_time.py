"""Each launch's 4 MiB round trip beside how physically contiguous its message buffers were.

    python docs/studies/2026-11-27-4mib-pingpong/frames_vs_time.py REPS FRAMES

REPS holds omb_4mib_first.sh's lines "rep K name=µs ..."; FRAMES the lines 4mib-pingpong/buffer_frames.c
appended, "frames K:name rank=R send=RUNS/REGIONS recv=RUNS/REGIONS pages=P" (RUNS: the physically
contiguous stretches of a buffer's pages, 1 one stretch, P none adjacent; REGIONS: the 2 MiB-aligned
stretches of physical memory they lie in). A launch's figure is the mean over its four buffers (two ranks,
send and receive): a 4 MiB ping-pong copies each of them once per round trip. Prints, per variant and over
all launches, the median µs of the launches whose buffers were contiguous (mean RUNS at most CONTIGUOUS)
and of the others, and Spearman's rank correlation (scipy.stats.spearmanr) of RUNS and of REGIONS with µs.
"""

from __future__ import annotations

import re
import statistics
import sys

from paired_ratios import repetitions
from scipy.stats import spearmanr

CONTIGUOUS = 128  # mean stretches per 1024-page buffer: 32 KiB or more unbroken on average


def main() -> None:
    reps_path, frames_path = sys.argv[1:]
    times = {(rep, name): us for rep, found in repetitions(open(reps_path)) for name, us in found.items()}
    found: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for line in open(frames_path):
        m = re.match(r"frames (\d+):(\w+) rank=\d+ send=(-?\d+)/(\d+) recv=(-?\d+)/(\d+)", line)
        if m and int(m[3]) > 0 and int(m[5]) > 0:
            found.setdefault((m[1], m[2]), []).extend([(int(m[3]), int(m[4])), (int(m[5]), int(m[6]))])
    launches = [
        (key[1], statistics.mean(r for r, _ in b), statistics.mean(g for _, g in b), times[key])
        for key, b in found.items()
        if key in times and len(b) == 4
    ]
    print(
        "| variant | launches | contiguous: n, median µs | scattered: n, median µs "
        "| Spearman ρ (runs, µs), p | Spearman ρ (regions, µs), p |"
    )
    print("|---|---|---|---|---|---|")
    for name in [*dict.fromkeys(n for n, *_ in launches), "all"]:
        rows = [(r, g, t) for n, r, g, t in launches if name in (n, "all")]
        near = [t for r, _, t in rows if r <= CONTIGUOUS]
        far = [t for r, _, t in rows if r > CONTIGUOUS]
        cell = lambda ts: f"{len(ts)}, {statistics.median(ts):.0f}" if ts else "0, -"  # noqa: E731
        rho = [spearmanr([x[i] for x in rows], [x[2] for x in rows]) for i in (0, 1)] if len(rows) > 2 else []
        corr = " | ".join(f"{c.statistic:.2f}, p = {c.pvalue:.2g}" for c in rho) or "- | -"
        print(f"| {name} | {len(rows)} | {cell(near)} | {cell(far)} | {corr} |")


if __name__ == "__main__":
    main()
