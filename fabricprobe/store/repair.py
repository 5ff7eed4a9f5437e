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
from fabricprobe.store import journal, timings
from fabricprobe.store.attrs import AttrsDamaged, read_attrs, write_attrs
from fabricprobe.store.fold import (
    WriterLock,
    apply,
    damaged_journal_path,
    fold,
    new_run_group,
    rewrite,
)
from fabricprobe.store.plausible import left_out
from fabricprobe.store.schema import FORMAT, SCHEMA_VERSION, row_to_dict

ROWS_AT_ONCE = 64  # a table is read in pieces of this many rows; a piece that fails is read again row by row


@dataclass
class RepairReport:
    damaged: bool = False
    runs: int = 0
    points: int = 0  # point rows in the repaired file
    lost_points: int = 0  # rows that could not be read
    lost_rows: list[str] = field(default_factory=list)  # "run/row" of each of them, row = position in the table
    lost_samples: list[str] = field(default_factory=list)  # "run/index" whose samples could not be read
    lost_runs: list[str] = field(default_factory=list)  # runs whose group could not be read at all
    unchecked_runs: list[str] = field(default_factory=list)  # runs kept whose attributes failed their checksum
    implausible: list[str] = field(
        default_factory=list
    )  # what readers leave out: values no writer gives, kept as they are
    journal_records: int = 0
    torn_bytes: int = 0  # an incomplete last journal record (a write cut short), dropped
    damaged_records: list[tuple[int, int]] = field(default_factory=list)  # (offset, bytes) skipped in the journal
    orphans: dict[str, list[int]] = field(default_factory=dict)  # run -> point indices whose run has no start record
    journal_kept_as: str = ""  # where a journal with damaged records was kept whole
    kept_as: str = ""  # where the damaged original now is

    @property
    def lossless(self) -> bool:
        return not (
            self.lost_points
            or self.lost_samples
            or self.lost_runs
            or self.damaged_records
            or self.unchecked_runs
            or self.orphans
            or self.implausible
        )


def _whole(path: str) -> bool:
    """Whether every run, table and sample array of path reads."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            for run in f["runs"].values():
                read_attrs(run)
                run["points"][()]
                for part in ("samples", *timings.REDUCED_PARTS):
                    for ds in run[part].values() if part in run else ():
                        ds[()]
        return True
    except Exception:  # noqa: BLE001 - any failure to read is damage
        return False


def recognise(path: str) -> None:
    """Raise UsageError unless `path` is (or was) a fabricprobe results file: repair rewrites only what
    it recognises, never a text file, a JSON file or another program's HDF5 file."""
    if not os.path.exists(path):
        return
    if os.path.islink(path) or not os.path.isfile(path):
        raise UsageError(f"{path} is not a regular file; repair changes nothing")
    if not os.access(path, os.R_OK | os.W_OK):
        raise UsageError(f"{path} cannot be read and written here (permission denied); repair changes nothing")
    if not h5py.is_hdf5(path):
        raise UsageError(f"{path} is not a fabricprobe results file (no HDF5 signature); repair changes nothing")
    try:
        with h5py.File(path, "r", locking=False) as f:
            fmt = f.attrs.get("format")
            fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
            ours = fmt == FORMAT or (fmt is None and "runs" in f)
            other = fmt is not None and fmt != FORMAT
            version = f.attrs.get("schema_version")
    except Exception:  # noqa: BLE001 - a root that does not read: damage, salvaged if anything reads
        return
    if other or not ours:
        raise UsageError(f"{path} is an HDF5 file but not a fabricprobe results file; repair changes nothing")
    if version is not None and int(version) > SCHEMA_VERSION:  # it was called "intact", which no reader agrees with
        raise UsageError(
            f"{path} has schema version {version}; this fabricprobe reads up to {SCHEMA_VERSION}: "
            "repair it with the fabricprobe that wrote it; repair changes nothing"
        )


def repair(path: str) -> RepairReport:
    found = journal.read(path)
    if not os.path.exists(path) and not found.records and not os.path.exists(journal.journal_path(path)):
        raise UsageError(f"{path}: no such file")
    recognise(path)
    lock = WriterLock(path)
    try:
        report = RepairReport(
            journal_records=len(found.records), torn_bytes=found.torn_bytes, damaged_records=found.damaged
        )
        if found.damaged:
            report.journal_kept_as = damaged_journal_path(path)
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
                if found.damaged:  # its damaged records are not in the file: the journal stays, whole
                    os.replace(journal.journal_path(path), report.journal_kept_as)
                else:
                    os.remove(journal.journal_path(path))
        with h5py.File(path, "r", locking=False) as f:
            report.runs = len(f["runs"])
            report.points = sum(run["points"].shape[0] for run in f["runs"].values())
            report.orphans = _orphans(found.records, set(f["runs"]))
            report.implausible = _implausible(f)
        return report
    finally:
        lock.release()


def _implausible(f: h5py.File) -> list[str]:
    """What readers will leave out of the repaired file (store.plausible): repair cannot know the right
    value of a number no writer gives, so it keeps the row as it is and says so."""
    out = []
    for run_id, run in f["runs"].items():
        points = [row_to_dict(row) for row in run["points"][()]]
        for at, why in left_out(read_attrs(run, checked=False), points):
            where = f"run {run_id}" if at is None else f"run {run_id} point {points[at]['index']}"
            out.append(f"{where} ({why})")
    return out


def _orphans(records: list[journal.Record], runs: set[str]) -> dict[str, list[int]]:
    """The point records that could not be folded: their run's start record is damaged (in the journal
    kept whole beside the file)."""
    out: dict[str, list[int]] = {}
    for r in records:
        if r.kind == journal.POINT and r.run not in runs:
            out.setdefault(r.run, []).append(r.index)
    return out


def _free_name(path: str) -> str:
    n, candidate = 1, path
    while os.path.exists(candidate):
        n += 1
        candidate = f"{path}.{n}"
    return candidate


UNCHECKED_NOTE = "repair: this run's attributes failed their checksum; kept as read, any of them may be wrong"


def _attrs_kept(run: h5py.Group, run_id: str, report: RepairReport) -> dict:
    """A run's attributes; ones that fail their checksum are kept as read, said in the repair's report
    and in the run's own notes (the new file's checksum covers them as kept, not as written)."""
    try:
        return read_attrs(run)
    except AttrsDamaged:
        report.unchecked_runs.append(run_id)
        attrs = read_attrs(run, checked=False)
        notes = attrs.get("notes") if isinstance(attrs.get("notes"), list) else []
        return {**attrs, "notes": [*notes, UNCHECKED_NOTE]}


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
                attrs = _attrs_kept(run, run_id, report)
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
                    continue
                except Exception:  # noqa: BLE001
                    pass
                for at in range(start, min(start + ROWS_AT_ONCE, nrows)):
                    try:
                        rows.append(table[at])
                    except Exception:  # noqa: BLE001 - its chunk fails its checksum
                        report.lost_points += 1
                        report.lost_rows.append(f"{run_id}/{at}")
            group["points"].resize((len(rows),))
            for i, row in enumerate(rows):
                group["points"][i] = row
                try:
                    times = timings.read(run, int(row["index"]))
                except Exception:  # noqa: BLE001
                    report.lost_samples.append(f"{run_id}/{int(row['index'])}")
                    continue
                if times is not None:
                    timings.write(group, int(row["index"]), times)
    return 0
