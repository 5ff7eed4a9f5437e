"""docs/studies/2026-11-26-bitflips.md: one random bit flipped in a results file's journal, or in the HDF5
file itself, trial after trial, and what every reader then makes of it.

    python benchmarks/bitflip_study.py [TRIALS] [SEED]     (default 300 of each; no MPI needed)

Each trial starts from the same file: 3 runs of 12 points with their samples folded into the HDF5
file, and a fourth run of 12 points still in the journal (its writer killed). Then one bit is flipped
at a random byte of the journal or of the HDF5 file, and:
- journal: the damaged record must be skipped and named (journal.read's `damaged`, or the torn end when
  the last record's length field itself was hit), every other record kept, and a reader (load_runs,
  what report, compare, plot and tune read through) that shows less than the original must say so
  (store.damage: one warning line, exit status 4);
- HDF5: every run, point row and sample array is read back and compared with the original; a value that
  differs without a reader saying "damaged" is a silent corruption (the count that must be 0), a
  "damaged" answer is a detection, and a flip that changes nothing readable (free space, padding) is
  harmless. `fabricprobe repair` is run on every detected case and must say what it lost.
Counts printed at the end; exit status 1 on any silent corruption or lost record."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.store import ResultsWriter, damage, journal, load_runs

POINTS = 12


def _row(run: int, i: int) -> dict:
    t = 1e-6 * (i + 1) * (run + 1)
    point = dict(index=i, key=f"r{run}k{i}", collective="allreduce", algorithm="library", status="ok", bytes=8 << i)
    return point | dict(nranks=2, dtype="float32", op="sum", mode="barrier", median_s=t, ci_low_s=t, ci_high_s=t)


def make(folder: Path) -> Path:
    path = folder / "r.h5"
    for run in range(3):
        w = ResultsWriter(str(path))
        w.start_run({"nranks": 2, "config": {"sizes": [8, 16]}, "hosts": ["a", "b"]})
        for i in range(POINTS):
            w.append_point(_row(run, i), np.full((20, 2), float(run * 100 + i)))
        w.update_run({"status": "complete"})
        w.close()
    w = ResultsWriter(str(path))
    w.start_run({"nranks": 2})
    for i in range(POINTS):
        w.append_point(_row(3, i), np.full((20, 2), float(300 + i)))
    del w  # killed: its records stay in the journal
    return path


def content(path: Path) -> dict:
    """Everything a reader gets: per run its attributes, points and samples."""
    out = {}
    for run in load_runs(str(path)):
        samples = {p["index"]: run.samples(p["index"]) for p in run.points}
        out[run.id] = (
            repr(sorted((k, repr(v)) for k, v in run.attrs.items())),
            [repr(sorted(p.items())) for p in run.points],
            {i: None if s is None else s.tobytes() for i, s in samples.items()},
        )
    return out


def after_repair(path: Path, truth: dict) -> tuple[int, int, int]:
    """Point rows lost, sample arrays lost (their row kept) and points changed once `repair` rebuilt the
    file, each point matched with the original's by its whole row; a point that reads back different
    from the original is a silent corruption."""
    want = {}
    for _attrs, rows, samples in truth.values():
        for row, (_index, data) in zip(rows, sorted(samples.items())):
            want[row] = data
    got = {}
    for run in load_runs(str(path)):
        for p in run.points:
            s = run.samples(p["index"])
            got[repr(sorted(p.items()))] = None if s is None else s.tobytes()
    rows = sum(1 for row in want if row not in got)
    samples = sum(1 for row in want if row in got and got[row] is None)
    wrong = sum(1 for row, data in got.items() if row not in want or (data is not None and data != want[row]))
    return rows, samples, wrong


def flip(path: Path, rng: random.Random) -> int:
    data = bytearray(path.read_bytes())
    at = rng.randrange(len(data))
    data[at] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return at


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    tally: Counter = Counter()
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        original = make(base)
        truth = content(original)
        records = journal.read(str(original)).records
        for trial in range(trials):
            for target in ("journal", "hdf5"):
                work = Path(tmp) / f"t{trial}-{target}"
                shutil.copytree(base, work)
                path = work / "r.h5"
                victim = Path(journal.journal_path(str(path))) if target == "journal" else path
                at = flip(victim, rng)
                if target == "journal":
                    found = journal.read(str(path))
                    named = bool(found.damaged) or found.torn_bytes > 0
                    kept = len(found.records)
                    tally["journal flips"] += 1
                    tally["journal detected"] += named
                    if not named or kept < len(records) - 1:
                        problems.append(f"journal byte {at}: named {named}, kept {kept} of {len(records)}")
                    damage.forget()  # what every reader gets (load_runs): a loss must be said
                    shown = content(path)
                    if shown != truth and not damage.seen():
                        tally["journal: reader SILENT"] += 1
                        problems.append(f"journal byte {at}: a reader lost something and did not say so")
                    else:
                        tally["journal: reader said" if shown != truth else "journal: reader lost nothing"] += 1
                else:
                    tally["hdf5 flips"] += 1
                    try:
                        got = content(path)
                    except Exception as exc:  # noqa: BLE001 - anything but the one line is a finding
                        if not isinstance(exc, UsageError):
                            tally["hdf5 TRACEBACK"] += 1
                            problems.append(f"hdf5 byte {at}: {type(exc).__name__}: {exc}")
                            continue
                        tally["hdf5 detected"] += 1
                        out = subprocess.run(
                            [sys.executable, "-m", "fabricprobe", "repair", str(path)], capture_output=True, text=True
                        )
                        tally[f"repair exit {out.returncode}"] += 1
                        if out.returncode not in (0, 1) or "Traceback" in out.stderr:
                            problems.append(f"hdf5 byte {at}: repair {out.returncode}: {out.stderr[-300:]}")
                            continue
                        rows, samples, wrong = after_repair(path, truth)
                        tally[f"after repair: {rows} of {4 * POINTS} point rows lost"] += 1
                        tally[f"after repair: {samples} of {4 * POINTS} sample arrays lost"] += 1
                        if wrong:
                            tally["after repair: SILENT"] += 1
                            problems.append(f"hdf5 byte {at}: {wrong} points differ after repair")
                        continue
                    if got == truth:
                        tally["hdf5 harmless"] += 1
                    else:
                        tally["hdf5 SILENT"] += 1
                        problems.append(f"hdf5 byte {at}: a value changed and no reader said so")
                shutil.rmtree(work)
    for key in sorted(tally):
        print(f"{key}: {tally[key]}")
    for line in problems[:30]:
        print("  ", line)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
