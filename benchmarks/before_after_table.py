"""The before/after rows of a `fabricprobe tune --verify` as a markdown table (docs/tuning.md).

    python benchmarks/before_after_table.py OUTDIR/tuning.json

Per row: the medians of the default's and the tuned runs, the median of the per-repetition ratios
(default time / tuned time: above 1 the files are faster), its 95% interval where there are 6 or more
repetitions, the range of the ratios, and the verdict `tune` gave.
"""

from __future__ import annotations

import json
import sys

from fabricprobe.sizes import format_size


def main() -> int:
    manifest = json.load(open(sys.argv[1]))
    checks = manifest.get("verification", {}).get("summary", {})
    left = manifest.get("left_to_default", [])
    print(f"verification: {checks}; left to the default: {len(left)}; proof: {manifest.get('proof', '')}")
    print()
    print("| collective | comm size | size | default µs | tuned µs | speedup | 95% CI | range (reps) | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in manifest.get("before_after", []):
        ci = "—" if r["ci_low"] is None else f"{r['ci_low']:.2f}–{r['ci_high']:.2f}"
        print(
            f"| {r['collective']} | {r['comm_size']} | {format_size(r['size'])} | {r['baseline_s'] * 1e6:.2f} | "
            f"{r['tuned_s'] * 1e6:.2f} | {r['speedup']:.2f}× | {ci} | {min(r['ratios']):.2f}–{max(r['ratios']):.2f} "
            f"({r['reps']}{'' if r['reps'] == r.get('planned', r['reps']) else '/' + str(r['planned'])}) | "
            f"{r['verdict']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
