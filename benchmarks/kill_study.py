"""The long form of the kill test: hundreds of SIGKILLs of a real sweep around its writes, each followed
by --resume (tests/kill_harness.py), and the count of damaged files, lost and duplicated points.

    python benchmarks/kill_study.py [KILLS] [SEED]      (default 300 kills; run from the repository root
                                                         in an environment with the embedded MPI)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from kill_harness import kill_cycle  # noqa: E402


def main() -> int:
    kills = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        tally = kill_cycle(Path(tmp) / "kills.h5", kills=kills, seed=seed)
    print(
        f"{tally.kills} kills in {time.monotonic() - started:.0f} s, {tally.completed_runs} runs completed: "
        f"{len(tally.corrupted)} damaged, {len(tally.lost)} with lost points, {len(tally.duplicated)} with duplicates"
    )
    for line in tally.corrupted + tally.lost + tally.duplicated:
        print("  ", line)
    return 0 if tally.clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
