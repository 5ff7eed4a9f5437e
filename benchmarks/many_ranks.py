"""docs/performance.md, "Many ranks on one node": the quick sweep at 64 and 128 ranks, oversubscribed on
this machine's cores (Open MPI yields when idle; MPICH busy-polls and cannot), with each rank's
proportional set size sampled through the run.

    python benchmarks/many_ranks.py OUT.json N [N ...]      (e.g. 64 128; the venv's mpiexec)

Per N: one `sweep --quick` into a fresh file, `/proc/PID/smaps_rollup` read for every rank once a
second (PSS shares the pages the ranks have in common, the libraries and numpy's code, so the sum is
what the job really holds), then: exit status, wall time, points stored against points planned,
the watchdog's report if it fired, and PSS per rank (mean over ranks at the peak of the sum, and the
largest single rank). Issue 32 saw the 128-rank quick sweep abort at point 57 of 115 (alltoall 2 MiB,
the 120 s watchdog) with PSS 89 MiB per rank up to then, 136.5 MiB at 64."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from mpirun import fabricprobe_argv, kill_session, launcher, mpi_env  # noqa: E402

from fabricprobe.store import load_runs  # noqa: E402


def _ranks(root: int) -> list[int]:
    """Every descendant of root whose command line runs fabricprobe."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child, up in parent.items():
            if up == pid:
                todo.append(child)
                try:
                    if b"fabricprobe" in Path(f"/proc/{child}/cmdline").read_bytes():
                        out.append(child)
                except OSError:
                    pass
    return out


def pss_kib(pid: int) -> int | None:
    """A process's proportional set size in KiB (None when it has gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def one(n: int, folder: Path) -> dict:
    path = folder / f"quick{n}.h5"
    argv = launcher().argv(n) + fabricprobe_argv() + ["sweep", "--quick", "-o", str(path), "--progress", "plain"]
    started = time.monotonic()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=mpi_env(), start_new_session=True
    )
    peak = {"sum_kib": 0, "ranks": 0, "max_kib": 0}
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    series: list[tuple[float, int, str]] = []  # (seconds, PSS sum in MiB, the last point finished)
    while proc.poll() is None:
        sizes = [s for s in (pss_kib(p) for p in _ranks(proc.pid)) if s is not None]
        done = next((line.split("]")[1].split(":")[0].strip() for line in reversed(lines) if line[:1] == "["), "")
        series.append((round(time.monotonic() - started, 1), sum(sizes) // 1024, done))
        if len(sizes) >= n and sum(sizes) > peak["sum_kib"]:
            peak = {"sum_kib": sum(sizes), "ranks": len(sizes), "max_kib": max(sizes), "after": done}
        peak["max_kib"] = max([peak["max_kib"], *sizes])
        time.sleep(1.0)
        if time.monotonic() - started > 3 * 3600:
            kill_session(proc.pid)
    wall = time.monotonic() - started
    reader.join(5)
    runs = load_runs(str(path)) if path.exists() else []
    run = runs[-1] if runs else None
    counts = [line[1:].split("]", 1)[0].split("/") for line in lines if line.startswith("[") and "/" in line[:12]]
    planned = int(counts[-1][1]) if counts else None
    watchdog = [line.rstrip() for line in lines if "watchdog" in line.lower() or "did not finish" in line]
    return {
        "ranks": n,
        "exit": proc.returncode,
        "wall_s": round(wall, 1),
        "points_stored": len(run.points) if run else 0,
        "points_planned": planned,
        "run_status": run.status if run else None,
        "pss_per_rank_mib_at_peak": round(peak["sum_kib"] / max(peak["ranks"], 1) / 1024, 1),
        "pss_sum_peak_mib": round(peak["sum_kib"] / 1024, 1),
        "pss_largest_rank_mib": round(peak["max_kib"] / 1024, 1),
        "pss_peak_after_point": peak.get("after", ""),
        "pss_sum_series_mib": series,
        "watchdog_lines": watchdog[:40],
        "tail": [line.rstrip() for line in lines[-15:]],
    }


def main() -> int:
    out = Path(sys.argv[1])
    results = []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for n in [int(x) for x in sys.argv[2:]]:
            results.append(one(n, Path(tmp)))
            print(
                json.dumps({k: v for k, v in results[-1].items() if k not in ("tail", "pss_sum_series_mib")}),
                flush=True,
            )
            out.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
