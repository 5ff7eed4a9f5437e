"""Writing results (rank 0 only): every change goes to the file's journal first and is folded into the
HDF5 file by an atomic replace, so a run killed at any moment leaves every completed point readable
(docs/schema.md, "Crash consistency")."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np

from fabricprobe.errors import StorageError, UsageError
from fabricprobe.stats import PointTimes
from fabricprobe.store import journal
from fabricprobe.store.fold import WriterLock, fold
from fabricprobe.store.reader import check_results_file, load_runs, run_ids
from fabricprobe.store.safety import deferred_signals
from fabricprobe.store.schema import STATUS_RUNNING, make_row


def check_output_path(path: str) -> None:
    """Raise UsageError unless results can be appended to `path`; touches nothing. Never through a
    symbolic link: the fold replaces the file by renaming over it, which would replace the link."""
    if os.path.islink(path):
        raise UsageError(f"cannot write results to {path}: it is a symbolic link (give its target)")
    if os.path.isdir(path):
        raise UsageError(f"cannot write results to {path}: it is a directory")
    if os.path.exists(path):
        check_results_file(path)
        if not os.access(path, os.W_OK):
            raise UsageError(f"cannot write results to {path}: {_why_not_writable(path)}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write results to {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):  # the journal and the folded copy are written beside it
        raise UsageError(f"cannot write results to {path}: directory {parent}: {_why_not_writable(parent)}")


def _why_not_writable(path: str) -> str:
    """A read-only file system said so (it was reported as "permission denied"), else permission."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return "permission denied"


# The start record is written twice: it alone says what the run is (its configuration, its library),
# and a flipped bit in it hid every point of the run ("holds no runs", 37 intact points never shown).
# The second copy is applied as the first (fold.apply is idempotent); one damaged copy costs nothing.
START_COPIES = 2
FOLD_EVERY_S = 30.0  # a running sweep folds its journal this often (each fold copies the file once)


class ResultsWriter:
    """Appends one run's points to a results file, through its journal (fabricprobe.store.journal):
    a point is complete once its record is on disk, and the HDF5 file itself is only ever replaced
    whole (fold), so no kill, full disk or reader can damage what was measured before. Holds the
    file's writer lock from construction to close(); a journal left by a killed writer is folded first."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.run_id: str | None = None
        self._appending = threading.Lock()
        self._lock: WriterLock | None = WriterLock(path)
        try:
            if os.path.exists(journal.journal_path(path)):
                load_runs(path)  # says what a damaged journal lost before the fold keeps it aside (exit 4)
            self._fold()
        except BaseException:
            self.close(fold_journal=False)
            raise

    def start_run(self, attrs: dict[str, Any]) -> str:
        existing = run_ids(self.path) if _has_results(self.path) else []  # not read: a file of many runs
        number = max((int(k) for k in existing if k.isdigit()), default=0) + 1
        run_id = f"{number:04d}"
        start = journal.Record(journal.START, run_id, attrs={**attrs, "status": STATUS_RUNNING})
        for _ in range(START_COPIES):
            self._append(start)
        self.run_id = run_id
        return run_id

    def attach(self, run_id: str) -> None:
        """Continue an existing run (resume)."""
        self.run_id = run_id

    def append_point(self, values: dict[str, Any], times: PointTimes | np.ndarray | None) -> None:
        """Add a point's row and its timings (a plain array: every rank's samples)."""
        if isinstance(times, np.ndarray):
            times = PointTimes(times)
        self._append(journal.Record(journal.POINT, self.run_id, row=make_row(values), times=times))
        if time.monotonic() - self._folded > FOLD_EVERY_S:
            self._fold()  # so plain HDF5 readers (h5py, pandas) follow a long run too

    def _fold(self) -> None:
        try:
            with self._appending:  # a record appended by another thread between the fold's read and its
                fold(self.path)  # removal of the journal would be lost
        except OSError as exc:
            raise StorageError(
                f"cannot fold the journal into {self.path}: {exc.strerror}; nothing is lost: readers see "
                f"{journal.journal_path(self.path)}, and fabricprobe repair {self.path} folds it later"
            ) from None
        self._folded = time.monotonic()

    def update_run(self, attrs: dict[str, Any]) -> None:
        """Change the run's attributes; nothing before its run has started (an interrupt in a sweep's
        first moments: a record naming no run made every later reader fail)."""
        if self.run_id is None:
            return
        self._append(journal.Record(journal.UPDATE, self.run_id, attrs=attrs))

    def _append(self, record: journal.Record) -> None:
        try:
            with self._appending, deferred_signals():  # one record at a time, whole (threads: the interrupt)
                journal.append(self.path, record)
        except OSError as exc:
            what = f"point {record.index}" if record.kind == journal.POINT else "the run's status"
            raise StorageError(
                f"cannot write {what} to {journal.journal_path(self.path)}: {exc.strerror}; every point "
                f"recorded before it is kept (fabricprobe repair {self.path} once the cause is fixed)"
            ) from None

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a writer dropped without close(): its records stay in the journal
        if getattr(self, "_lock", None) is not None:
            self._lock.release()
            self._lock = None

    def close(self, fold_journal: bool = True) -> None:
        """Fold the journal into the file (a copy renamed over it) and release the lock."""
        try:
            if fold_journal and self._lock is not None:
                self._fold()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None


def _has_results(path: str) -> bool:
    return os.path.exists(path) or os.path.exists(journal.journal_path(path))
