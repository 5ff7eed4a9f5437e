"""The tables of docs/site.md from benchmarks/site_study.sh's folder: the same sweep through srun and
mpiexec (Open MPI 4.1) and through the 5.0 wheel, each round's medians side by side (ranges over the
rounds, and the per-round ratios: the runs of one round were measured back to back), then what
tune-sweep + tune --verify produced with each library.   Usage: python benchmarks/site_table.py DIR"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from fabricprobe.store.reader import load_runs

PATHS = {
    "srun-ompi41.h5": "srun, OMPI 4.1",
    "mpiexec-ompi41.h5": "mpiexec, OMPI 4.1",
    "mpiexec-ompi50.h5": "mpiexec, OMPI 5.0",
}


def _medians(path: Path) -> list[dict[tuple[str, int], float]]:
    """Per run (round): (collective, size) -> median µs of the library's points."""
    out = []
    for run in load_runs(str(path)):
        out.append(
            {
                (p["collective"], int(p["bytes"])): float(p["median_s"]) * 1e6
                for p in run.points
                if p["status"] == "ok" and p["algorithm"] == "library" and p["collective"] != "empty"
            }
        )
    return out


def _range(values: list[float], fmt: str = "{:.1f}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def sweep_table(folder: Path) -> None:
    if not all((folder / name).exists() for name in PATHS):
        print("(no srun / mpiexec sweeps in this folder: site_study.sh ran with 0 rounds)")
        return
    runs = {name: _medians(folder / name) for name in PATHS}
    rounds = min(len(r) for r in runs.values())
    keys = sorted(set.intersection(*(set(r[0]) for r in runs.values())))
    a, b, c = PATHS
    print(f"Medians in µs, range over {rounds} rounds; ratios per round (runs of one round back to back).\n")
    print(f"| collective | size | {' | '.join(PATHS.values())} | srun / mpiexec (4.1) | 4.1 / 5.0 (mpiexec) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key in keys:
        cells = [_range([runs[name][r][key] for r in range(rounds)]) for name in PATHS]
        srun = [runs[a][r][key] / runs[b][r][key] for r in range(rounds)]
        versions = [runs[b][r][key] / runs[c][r][key] for r in range(rounds)]
        print(
            f"| {key[0]} | {_size(key[1])} | {' | '.join(cells)} | "
            f"{_range(srun, '{:.2f}')}× | {_range(versions, '{:.2f}')}× |"
        )


def tuning_table(folder: Path) -> None:
    print("\n| library | tune-sweep jobs measured | rules (comm size: range → algorithm) | verification | files |")
    print("|---|---:|---|---|---|")
    for name, label in (
        ("ompi41", "Open MPI 4.1.4 (Debian)"),
        ("ompi50", "Open MPI 5.0 wheel"),
        ("mpich40", "MPICH 4.0.2 (Debian)"),
    ):
        manifest = folder / f"tuned-{name}" / "tuning.json"
        log = (folder / f"tune-sweep-{name}.log").read_text()
        found = re.search(r"(\d+ of \d+) jobs measured", log)
        runs = found.group(1) if found else "?"
        if not manifest.exists():
            print(f"| {label} | {runs} | (tune failed: see tune-{name}.log) | | |")
            continue
        m = json.loads(manifest.read_text())
        rules = defaultdict(list)
        for coll, sections in m["rules"]["rules"].items():
            for n, ranges in sections.items():
                for r in ranges:
                    if r["winner"] != "default":
                        hi = "∞" if r["hi"] is None else _size(r["hi"])
                        rules[coll].append(f"{n}: [{_size(r['lo'])}, {hi}) → {r['winner']}")
        text = "; ".join(f"{c} {', '.join(v)}" for c, v in rules.items()) or "the default everywhere"
        v = m.get("verification")
        if v is None:  # tune wrote no library file, so there was nothing to verify
            status = "nothing to verify"
        else:
            status = ("passed " if v["passed"] else "FAILED ") + json.dumps(v["summary"]).replace('"', "")
        files = ", ".join(Path(p).name for p in m["files"].values())
        print(f"| {label} | {runs} | {text} | {status} | {files} |")


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    sweep_table(folder)
    tuning_table(folder)
