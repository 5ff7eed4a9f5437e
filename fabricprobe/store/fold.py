"""Changing a results file without ever damaging it: a copy is changed, made durable and renamed over
the original (rename is atomic, so a kill leaves the old file or the new one, never half of either),
and the journal's records are folded in that way. The exclusive writer lock lives here too."""

from __future__ import annotations

import errno
import fcntl
import glob
import os
import shutil
from typing import Any, Callable

import h5py
import numpy as np

from fabricprobe.errors import UsageError
from fabricprobe.store import journal
from fabricprobe.store.attrs import write_attrs
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
        with h5py.File(tmp, "a") as f:
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


def new_run_group(runs: h5py.Group, run_id: str) -> h5py.Group:
    group = runs.create_group(run_id)
    group.create_dataset("points", shape=(0,), maxshape=(None,), dtype=POINT_DTYPE, chunks=(64,))
    group.create_group("samples")
    return group


def write_samples(group: h5py.Group, index: int, samples: np.ndarray) -> None:
    name = f"{index:06d}"
    if name in group["samples"]:
        del group["samples"][name]
    group["samples"].create_dataset(
        name,
        data=samples,
        compression="gzip",
        compression_opts=4,
        shuffle=True,
        chunks=True if samples.size > 1024 else None,
    )


def apply(f: h5py.File, records: list[journal.Record]) -> int:
    """Apply journal records to an open file, idempotently (a record already folded changes nothing:
    a run that exists is not made again, a point whose index is in the table is not added again)."""
    runs = f.require_group("runs")
    known: dict[str, set[int]] = {}
    applied = 0
    for r in records:
        if r.kind == journal.START:
            group = runs[r.run] if r.run in runs else new_run_group(runs, r.run)
            write_attrs(group, r.attrs or {})
        elif r.kind == journal.UPDATE:
            if r.run not in runs:
                continue
            write_attrs(runs[r.run], r.attrs or {})
        else:
            if r.run not in runs:
                continue
            group = runs[r.run]
            seen = known.setdefault(r.run, {int(i) for i in group["points"]["index"]})
            if r.index in seen:
                continue
            if r.samples is not None and r.samples.size:
                write_samples(group, r.index, r.samples)
            table = group["points"]
            n = table.shape[0]
            table.resize((n + 1,))
            table[n] = r.row[0]
            seen.add(r.index)
        applied += 1
    return applied


def fold(path: str) -> int:
    """Fold path's journal into path and remove it; returns how many records changed the file. The
    caller holds the writer lock."""
    for stale in glob.glob(glob.escape(path) + ".tmp-*"):
        os.remove(stale)  # a copy a killed writer was making (only the lock holder makes them)
    found = journal.read(path)
    jpath = journal.journal_path(path)
    if found.records:
        applied = rewrite(path, lambda f: apply(f, found.records), os.path.getsize(jpath))
    else:
        applied = 0
    if os.path.exists(jpath):
        os.remove(jpath)  # folded, or only a record cut short by a kill (never reported complete)
    return applied


def lock_path(path: str) -> str:
    return path + ".lock"


class WriterLock:
    """One writer per results file (FILE.lock, flock'd): a second `sweep -o`/`--resume` of the same
    file is refused at once instead of interleaving two runs' records."""

    def __init__(self, path: str) -> None:
        self.lock_path = lock_path(path)
        while True:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise UsageError(f"cannot write results to {path}: {exc.strerror}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise UsageError(
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


def update(path: str, change: Callable[[h5py.File], Any]) -> Any:
    """change() applied to path under the writer lock, by rewrite: for writers other than a sweep (a
    trainer's record), which must neither damage the file nor interleave with a sweep writing it."""
    lock = WriterLock(path)
    try:
        fold(path)
        return rewrite(path, change)
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
