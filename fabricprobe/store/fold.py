"""Changing a results file without ever damaging it: a copy is changed, made durable and renamed over
the original (rename is atomic, so a kill leaves the old file or the new one, never half of either),
and the journal's records are folded in that way. The exclusive writer lock lives here too."""

from __future__ import annotations

import errno
import fcntl
import glob
import os
import shutil
import time
from typing import Any, Callable

import h5py

from fabricprobe.errors import DamagedError, UsageError
from fabricprobe.store import journal, timings
from fabricprobe.store.attrs import AttrsDamaged, write_attrs
from fabricprobe.store.safety import deferred_signals
from fabricprobe.store.schema import FORMAT, POINT_DTYPE, SCHEMA_VERSION


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


HEADROOM = 1 << 20  # bytes beyond the copy's size that a fold wants free (HDF5's metadata, rounding)


def _room_for(path: str, extra_bytes: int) -> None:
    """Refuse (ENOSPC) to start a copy the disk cannot hold: HDF5 that runs out of space mid-write
    prints "Exception ignored" tracebacks and can crash the process (seen: a segfault on a full tmpfs)."""
    size = os.path.getsize(path) if os.path.exists(path) else 0
    st = os.statvfs(os.path.dirname(os.path.abspath(path)))
    if st.f_bavail * st.f_frsize < size + extra_bytes + HEADROOM:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def replace_whole(path: str, change: Callable[[h5py.File], Any], extra_bytes: int = 0) -> Any:
    """Apply change() to a copy of path (a new HDF5 file if there is none) and rename the copy over
    path once it is on disk. A failure (disk full, a kill) leaves path as it was. extra_bytes: what
    change() adds at most, for the free-space check. Any HDF5 file kept whole this way (the doctor's
    record too) goes through here."""
    _room_for(path, extra_bytes)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        if os.path.exists(path):
            shutil.copyfile(path, tmp)
        with h5py.File(tmp, "a", libver=LIBVER) as f:
            result = change(f)
        _fsync_path(tmp)
        with deferred_signals():
            os.replace(tmp, path)
            _fsync_path(os.path.dirname(os.path.abspath(path)))
        return result
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def rewrite(path: str, change: Callable[[h5py.File], Any], extra_bytes: int = 0) -> Any:
    """replace_whole() of a results file: a new one gets the format attributes and the runs group."""

    def stamped(f: h5py.File) -> Any:
        if "format" not in f.attrs:
            f.attrs["format"] = FORMAT
            f.attrs["schema_version"] = SCHEMA_VERSION
        f.require_group("runs")
        return change(f)

    return replace_whole(path, stamped, extra_bytes)


# Every dataset carries a Fletcher-32 checksum of each chunk, and new files take HDF5's checksummed
# metadata (object headers, B-trees: libver 1.10): a flipped bit in a point row or a sample array
# read back as another number, silently (benchmarks/bitflip_study.py); now a reader says "damaged".
LIBVER = ("v110", "latest")


def new_run_group(runs: h5py.Group, run_id: str) -> h5py.Group:
    group = runs.create_group(run_id)
    # One row a chunk: Fletcher-32 is per chunk, and with 64 rows a chunk one flipped bit made 64 points
    # unreadable (bitflip_study: 12 of 48 lost per detected flip); read back 2,000 rows in 10 ms, not 3.5.
    group.create_dataset("points", shape=(0,), maxshape=(None,), dtype=POINT_DTYPE, chunks=(1,), fletcher32=True)
    group.create_group("samples")
    return group


def apply(f: h5py.File, records: list[journal.Record]) -> int:
    """Apply journal records to an open file, idempotently (a record already folded changes nothing:
    a run that exists is not made again, a point whose index is in the table is not added again). A
    run's attributes from all its records are written at once, after its points: the caller applies
    to a copy (replace_whole), so a damaged run's refusal still leaves the file as it was."""
    runs = f.require_group("runs")
    known: dict[str, set[int]] = {}
    attrs: dict[str, dict] = {}  # each run's attributes, later records over earlier: written once a run
    applied = 0
    for r in records:
        if r.kind == journal.START:
            if r.run not in runs:
                new_run_group(runs, r.run)
            attrs.setdefault(r.run, {}).update(r.attrs or {})
        elif r.kind == journal.UPDATE:
            if r.run not in runs:
                continue
            attrs.setdefault(r.run, {}).update(r.attrs or {})
        else:
            if r.run not in runs:
                continue
            group = runs[r.run]
            seen = known.setdefault(r.run, {int(i) for i in group["points"]["index"]})
            if r.index in seen:
                continue
            if r.times is not None:
                timings.write(group, r.index, r.times)
            table = group["points"]
            n = table.shape[0]
            table.resize((n + 1,))
            # in the table's own layout: a run resumed by a newer fabricprobe keeps the table its first
            # version made (h5py refuses to cast a row with a field the table lacks)
            table[n] = journal.with_fields(r.row, table.dtype)[0]
            seen.add(r.index)
        applied += 1
    for run, values in attrs.items():  # checksummed: each write reads every attribute back (twice)
        write_attrs(runs[run], values)
    return applied


def fold(path: str) -> int:
    """Fold path's journal into path and remove it; returns how many records changed the file. The
    caller holds the writer lock. A journal with damaged records (journal.read skipped them) is not
    removed but kept whole beside the file (damaged_journal_path), so nothing that was not folded is
    ever deleted."""
    for stale in glob.glob(glob.escape(path) + ".tmp-*"):
        os.remove(stale)  # a copy a killed writer was making (only the lock holder makes them)
    found = journal.read(path)
    jpath = journal.journal_path(path)
    if found.records:
        try:
            applied = rewrite(path, lambda f: apply(f, found.records), os.path.getsize(jpath))
        except AttrsDamaged as exc:  # never a new checksum over damaged attributes
            raise DamagedError(
                f"{path} is damaged ({exc}); fabricprobe repair {path} keeps every intact point"
            ) from None
    else:
        applied = 0
    if found.damaged and os.path.exists(jpath):
        os.replace(jpath, damaged_journal_path(path))
    elif os.path.exists(jpath):
        os.remove(jpath)  # folded, or only a record cut short by a kill (never reported complete)
    return applied


def damaged_journal_path(path: str) -> str:
    """Where fold keeps a journal whose damaged records it skipped: FILE.journal.damaged, or .2, .3 ..."""
    base, n = journal.journal_path(path) + ".damaged", 1
    candidate = base
    while os.path.exists(candidate):
        n += 1
        candidate = f"{base}.{n}"
    return candidate


def lock_path(path: str) -> str:
    return path + ".lock"


BUSY_S = 1.0  # a lock held this briefly is a probe, not a writer
RECORD_WAIT_S = 600.0  # a doctor's or trainer's record waits this long for a sweep writing its file


class LockBusy(UsageError):
    """Another process writes the file."""


class WriterLock:
    """One writer per results file (FILE.lock, flock'd): a second `sweep -o`/`--resume` of the same
    file is refused at once instead of interleaving two runs' records. A lock held for a moment only
    (being_written() probes it with a lock of its own: 3 of 20 repairs and resumes were refused while
    nothing wrote the file) is waited out for BUSY_S; a writer that may wait longer (a doctor's or a
    trainer's record) gives `wait_s`, and `say` is told once that it waits."""

    def __init__(self, path: str, wait_s: float = 0.0, say: Callable[[str], None] | None = None) -> None:
        self.lock_path = lock_path(path)
        deadline = time.monotonic() + max(wait_s, BUSY_S)
        told = False
        while True:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise UsageError(f"cannot write results to {path}: {exc.strerror}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                if time.monotonic() < deadline:
                    if say is not None and not told and wait_s > BUSY_S:
                        say(f"{path} is being written by another fabricprobe process; waiting up to {wait_s:g} s")
                        told = True
                    time.sleep(0.05)
                    continue
                raise LockBusy(
                    f"{path} is being written by another fabricprobe process (a sweep, a resume or a repair); "
                    "wait for it to end"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a lock file its previous holder removed after we opened it
                self.fd = fd
                return
            os.close(fd)

    def release(self) -> None:
        if self.fd is not None:
            os.remove(self.lock_path)
            os.close(self.fd)
            self.fd = None


def update(
    path: str,
    change: Callable[[h5py.File], Any],
    extra_bytes: int = 0,
    results: bool = True,
    say: Callable[[str], None] | None = None,
) -> tuple[str, Any]:
    """change() applied to path under the writer lock (rewrite for a results file, replace_whole for
    another, the doctor's): for writers other than a sweep (a trainer's record, a doctor run), which must
    neither damage the file nor interleave with another writer (two doctors at once lost a record). It
    waits for a writer up to RECORD_WAIT_S, said once; one that still holds the file then (a long sweep)
    gets the record written beside it (FILE-PID.h5), and say() is told where. Returns (the file
    written, change()'s result): what was measured is never lost."""
    try:
        lock = WriterLock(path, RECORD_WAIT_S, say)
    except LockBusy:
        stem, suffix = os.path.splitext(path)
        beside = f"{stem}-{os.getpid()}{suffix or '.h5'}"
        if say is not None:
            say(f"{path} is still being written by another process: this record goes to {beside}")
        path, lock = beside, WriterLock(beside)
    try:
        if results:
            fold(path)
            return path, rewrite(path, change, extra_bytes)
        return path, replace_whole(path, change, extra_bytes)
    finally:
        lock.release()


def being_written(path: str) -> bool:
    """Whether a live process holds path's writer lock (a "running" run without one was killed)."""
    try:
        fd = os.open(lock_path(path), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the lock we may have taken
    return False
