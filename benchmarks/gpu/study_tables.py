"""The tables of the GPU study (benchmarks/gpu/study.sh): GPUDirect on against staged and pipelined, and
the trainers on the tuned collective. Markdown on stdout, for docs/gpu.md.

    python benchmarks/gpu/study_tables.py OUT

1. Per ranks, collective, algorithm and size: the median µs of each transfer (direct = GPUDirect on),
   over every run of OUT/gpu-n*.h5 that measured it (direct's and repeat's: "a–b" when several), and on
   against the faster of staged and pipelined (> 1: on is faster). `nr` = not runnable (its note is
   listed below the table), `WRONG` = a point that failed validation.
2. Per training run of OUT/train.h5: the allreduce that ran, accuracy and the step's split.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

from fabricprobe.sizes import format_size
from fabricprobe.store import load_runs

TRANSFERS = ("direct", "staged", "pipelined")


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def transfer_rows(paths: list[Path]) -> tuple[list[str], list[str]]:
    cells: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    notes: dict[str, str] = {}
    for run in (run for path in paths for run in load_runs(str(path))):
        for p in run.points:
            transfer = _text(p["transfer"])
            if transfer not in TRANSFERS:
                continue
            key = (int(p["nranks"]), _text(p["collective"]), _text(p["algorithm"]), int(p["bytes"]))
            status = _text(p["status"])
            if status == "ok":
                cells[key][transfer].append(p["median_s"] * 1e6)
            else:
                cells[key][transfer].append(float("nan") if status != "wrong" else float("-inf"))
                notes.setdefault(f"{transfer} {key[1]} n={key[0]}", _text(p["note"])[:160])
    head = "| n | collective | algorithm | size | on µs | staged µs | pipelined µs | on vs best off |"
    rows = [head, "|" + "---|" * 8]
    for (n, coll, alg, size), by in sorted(cells.items()):
        shown = [_cell(by.get(t, [])) for t in TRANSFERS]
        rows.append(f"| {n} | {coll} | {alg} | {format_size(size)} | {' | '.join(shown)} | {_ratio(by)} |")
    return rows, [f"- {where}: {note}" for where, note in sorted(notes.items())]


def _cell(values: list[float]) -> str:
    if not values:
        return "–"
    if any(v == float("-inf") for v in values):
        return "WRONG"
    ok = [v for v in values if v == v]
    if not ok:
        return "nr"
    return f"{min(ok):.1f}" if len(ok) == 1 or max(ok) - min(ok) < 0.05 else f"{min(ok):.1f}–{max(ok):.1f}"


def _ratio(by: dict[str, list[float]]) -> str:
    def best(t):
        ok = [v for v in by.get(t, []) if v == v and v > 0]
        return min(ok) if ok else None

    on, off = best("direct"), [b for b in (best("staged"), best("pipelined")) if b is not None]
    return f"{min(off) / on:.2f}×" if on and off else "–"


def training_rows(path: Path) -> list[str]:
    from trainers import record

    rows = ["| run | trainer | n | allreduce | test acc | wall s | compute s | comm s | wait s |", "|" + "---|" * 9]
    for run in record.read(str(path)):
        used = ", ".join(run.get("algorithms_used") or {}) or "none"
        rows.append(
            f"| {run['id']} | {run['trainer']} | {run['nranks']} | {used} | {run['final_test_accuracy']:.4f} "
            f"| {run['wall_s']:.1f} | {run['compute_s']:.2f} | {run['comm_s']:.2f} | {run['wait_s']:.2f} |"
        )
    return rows


def main(out: str) -> int:
    folder = Path(out)
    sweeps, trained = sorted(folder.glob("gpu-n*.h5")), folder / "train.h5"
    if sweeps:
        rows, notes = transfer_rows(sweeps)
        print("### GPUDirect on against staged and pipelined\n", *rows, sep="\n")
        if notes:
            print("\nNot runnable or wrong, and why:", *notes, sep="\n")
    else:
        print(f"not done: no {folder}/gpu-n*.h5 (phase direct)")
    if trained.exists():
        print("\n### Trainers on the tuned allreduce\n", *training_rows(trained), sep="\n")
    else:
        print(f"not done: no {trained} (phase train)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "gpu-study"))
