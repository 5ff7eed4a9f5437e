"""Per-point time limit. A collective that never returns must not hold the job forever.

A daemon thread on every rank watches the point in progress. When it overruns, rank 0 names
the point, marks the run aborted in the results file (completed points are already on disk)
and ends its process; other ranks end theirs a little later in case rank 0 cannot. A rank that
exits without MPI_Finalize makes the launcher (mpiexec, srun) tear the whole job down, so no MPI
call is needed: MPI_Abort from this second thread is allowed only at MPI_THREAD_MULTIPLE, and the
sweep runs at single by default, so the watchdog calls it only when the library granted multiple.
MPI calls and compiled timing loops release the GIL, so the thread runs while they block.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable

from fabricprobe.errors import EXIT_WATCHDOG

_GRACE_NON_ROOT = 5.0  # seconds other ranks wait for rank 0 to report first


class Watchdog:
    def __init__(
        self,
        limit: float,
        rank: int,
        abort: Callable[[int], None] | None = None,
        on_timeout: Callable[[str], None] | None = None,
    ) -> None:
        """abort: MPI_Abort, only where the thread level allows it from this thread (None: exit only)."""
        self.limit = limit
        self.rank = rank
        self._abort = abort
        self._on_timeout = on_timeout
        self._label: str | None = None
        self._deadline = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="fabricprobe-watchdog", daemon=True)
        if limit > 0:
            self._thread.start()

    def arm(self, label: str) -> None:
        with self._lock:
            self._label = label
            self._deadline = time.monotonic() + self.limit

    def disarm(self) -> None:
        with self._lock:
            self._label = None

    def stop(self) -> None:
        self.disarm()
        self._wake.set()

    def _watch(self) -> None:
        while not self._wake.wait(0.2):
            with self._lock:
                label, deadline = self._label, self._deadline
            if label is None or time.monotonic() < deadline:
                continue
            self._fire(label)
            return

    def _fire(self, label: str) -> None:
        if self.rank == 0:
            print(
                f"fabricprobe: error: {label} did not finish within the {self.limit:g} s watchdog limit "
                f"(--point-timeout); aborting the job",
                file=sys.stderr,
                flush=True,
            )
            if self._on_timeout is not None:
                try:
                    self._on_timeout(label)
                except Exception as exc:  # never let bookkeeping stop the abort
                    print(f"fabricprobe: could not mark the run aborted: {exc}", file=sys.stderr, flush=True)
        else:
            time.sleep(_GRACE_NON_ROOT)
        try:
            if self._abort is not None:
                self._abort(EXIT_WATCHDOG)
        finally:
            os._exit(EXIT_WATCHDOG)
