"""`fabricprobe repair FILE`: make a results file whole again, keeping every intact point.

An intact file only has its journal folded (what a killed writer left). A file HDF5 cannot read
whole (damaged by an older fabricprobe killed inside an in-place write, a disk error, a truncated
copy) is salvaged: every run, point row and sample array that still reads is copied into a new file,
the journal's records on top, and the damaged file is kept beside it as FILE.damaged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import h5py

from fabricprobe.errors import UsageError
from fabricprobe.store import journal
from fabricprobe.store.attrs import read_attrs, write_attrs
from fabricprobe.store.fold import WriterLock, apply, fold, new_run_group, rewrite, write_samples

ROWS_AT_ONCE = 64  # a damaged table is read in pieces of this many rows, so one bad chunk loses only its rows


@dataclass
class RepairReport:
    damaged: bool = False
    runs: int = 0
    points: int = 0  # point rows in the repaired file
    lost_points: int = 0  # rows that could not be read
    lost_samples: list[str] = field(default_factory=list)  # "run/index" whose samples could not be read
    lost_runs: list[str] = field(default_factory=list)  # runs whose group could not be read at all
    journal_records: int = 0
    torn_bytes: int = 0  # an incomplete last journal record (a write cut short), dropped
    kept_as: str = ""  # where the damaged original now is

    @property
    def lossless(self) -> bool:
        return not (self.lost_points or self.lost_samples or self.lost_runs)


def _whole(path: str) -> bool:
    """Whether every run, table and sample array of path reads."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            for run in f["runs"].values():
                read_attrs(run)
                run["points"][()]
                for ds in run["samples"].values():
                    ds[()]
        return True
    except Exception:  # noqa: BLE001 - any failure to read is damage
        return False


def repair(path: str) -> RepairReport:
    found = journal.read(path)
    if not os.path.exists(path) and not found.records and not os.path.exists(journal.journal_path(path)):
        raise UsageError(f"{path}: no such file")
    lock = WriterLock(path)
    try:
        report = RepairReport(journal_records=len(found.records), torn_bytes=found.torn_bytes)
        if not os.path.exists(path) or _whole(path):
            fold(path)
        else:
            report.damaged = True
            report.kept_as = _free_name(path + ".damaged")
            salvaged = path + ".salvage"
            if os.path.exists(salvaged):
                os.remove(salvaged)
            rewrite(salvaged, lambda f: _salvage(path, f, report) + apply(f, found.records))
            os.link(path, report.kept_as)  # the original stays whole under its new name first...
            os.replace(salvaged, path)  # ...then the salvaged file takes the name, atomically
            if os.path.exists(journal.journal_path(path)):
                os.remove(journal.journal_path(path))
        with h5py.File(path, "r", locking=False) as f:
            report.runs = len(f["runs"])
            report.points = sum(run["points"].shape[0] for run in f["runs"].values())
        return report
    finally:
        lock.release()


def _free_name(path: str) -> str:
    n, candidate = 1, path
    while os.path.exists(candidate):
        n += 1
        candidate = f"{path}.{n}"
    return candidate


def _salvage(path: str, out: h5py.File, report: RepairReport) -> int:
    """Copy what reads of path into out; returns 0 (apply() adds the journal's count)."""
    try:
        src = h5py.File(path, "r", locking=False)
    except Exception:  # noqa: BLE001 - not even the superblock reads: nothing to keep from it
        report.lost_runs.append("(the whole file: HDF5 cannot open it)")
        return 0
    with src:
        try:
            run_ids = sorted(src["runs"].keys())
        except Exception:  # noqa: BLE001
            report.lost_runs.append("(the run index)")
            return 0
        for run_id in run_ids:
            try:
                run = src["runs"][run_id]
                attrs = read_attrs(run)
                table = run["points"]
                nrows = table.shape[0]
            except Exception:  # noqa: BLE001
                report.lost_runs.append(run_id)
                continue
            group = new_run_group(out["runs"], run_id)
            write_attrs(group, attrs)
            rows = []
            for start in range(0, nrows, ROWS_AT_ONCE):
                try:
                    rows.extend(table[start : start + ROWS_AT_ONCE])
                except Exception:  # noqa: BLE001
                    report.lost_points += min(ROWS_AT_ONCE, nrows - start)
            group["points"].resize((len(rows),))
            for i, row in enumerate(rows):
                group["points"][i] = row
                name = f"{int(row['index']):06d}"
                try:
                    samples = run["samples"][name][()] if name in run["samples"] else None
                except Exception:  # noqa: BLE001
                    report.lost_samples.append(f"{run_id}/{int(row['index'])}")
                    continue
                if samples is not None:
                    write_samples(group, int(row["index"]), samples)
    return 0
