"""Per-point time limit. A collective that never returns must not hold the job forever.

A daemon thread on every rank watches the point in progress. When it overruns, rank 0 names
the point, marks the run aborted in the results file (completed points are already on disk)
and ends its process; other ranks end theirs a little later in case rank 0 cannot. A rank that
exits without MPI_Finalize makes the launcher (mpiexec, srun) tear the whole job down, so no MPI
call is needed: MPI_Abort from this second thread is allowed only at MPI_THREAD_MULTIPLE, and the
sweep runs at single by default, so the watchdog calls it only when the library granted multiple.
MPI calls and compiled timing loops release the GIL, so the thread runs while they block.

Where every rank is, when it fires: each rank's watchdog, on its own deadline, writes what it was
doing (the point it armed for, or that it was between points, and every thread's Python stack) to
REPORTS/rank-R.txt beside the results file (renamed into place once whole: rank 0 reads a report as
soon as it appears, and a half-written one named the watchdog's own thread); rank 0 waits a moment for
them, prints one line per rank
and hands them to on_timeout, which stores them with the run. At 128 ranks a quick sweep stopped in a
point whose cause could not be told from what was left: a hang, and whose, now can.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from fabricprobe.errors import EXIT_WATCHDOG

_GRACE_NON_ROOT = 5.0  # seconds other ranks wait for rank 0 to report first
_GATHER_S = 3.0  # seconds rank 0 waits for the other ranks' reports


class Watchdog:
    def __init__(
        self,
        limit: float,
        rank: int,
        abort: Callable[[int], None] | None = None,
        on_timeout: Callable[..., None] | None = None,
        reports: str | None = None,
        nranks: int = 1,
    ) -> None:
        """abort: MPI_Abort, only where the thread level allows it from this thread (None: exit only);
        on_timeout(label, ranks) on rank 0, ranks: rank -> what it was doing (with `reports`, a folder
        every rank can write: where each rank leaves its report)."""
        self.limit = limit
        self.rank = rank
        self.reports = reports
        self.nranks = nranks
        self._last = "no point yet"
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
            if self._label is not None:
                self._last = self._label
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

    def _report(self, label: str) -> None:
        """This rank's report: where it is, and every thread's stack."""
        if self.reports is None:
            return
        try:
            folder = Path(self.reports)
            folder.mkdir(exist_ok=True)
            writing = folder / f".rank-{self.rank}.writing"
            with open(writing, "w") as f:
                f.write(f"in {label}\n")
                f.flush()
                faulthandler.dump_traceback(file=f, all_threads=True)
            os.replace(writing, folder / f"rank-{self.rank}.txt")  # rank 0 reads it whole or not at all
        except OSError:
            pass

    def _gathered(self) -> dict[int, dict]:
        """rank -> {"where", "stack"} of the reports the ranks left (rank 0 waits _GATHER_S for them)."""
        if self.reports is None:
            return {}
        folder = Path(self.reports)
        deadline = time.monotonic() + _GATHER_S
        while time.monotonic() < deadline and len(list(folder.glob("rank-*.txt"))) < self.nranks:
            time.sleep(0.1)
        out = {}
        for path in sorted(folder.glob("rank-*.txt")):
            try:
                text = path.read_text(errors="replace")
                rank = int(path.stem.split("-")[1])
            except (OSError, ValueError, IndexError):
                continue
            where, _, stack = text.partition("\n")
            out[rank] = {"where": where, "stack": stack[-4000:]}
        return out

    def _fire(self, label: str) -> None:
        self._report(label)
        if self.rank == 0:
            print(
                f"fabricprobe: error: {label} did not finish within the {self.limit:g} s watchdog limit "
                f"(--point-timeout); aborting the job",
                file=sys.stderr,
                flush=True,
            )
            ranks = self._gathered()
            for rank in range(self.nranks):
                found = ranks.get(rank)
                where = found["where"] if found else "no report (stuck where its watchdog could not run)"
                print(f"fabricprobe: rank {rank}: {where}{_top(found)}", file=sys.stderr, flush=True)
            if self._on_timeout is not None:
                try:
                    self._on_timeout(label, ranks)
                except Exception as exc:  # never let bookkeeping stop the abort
                    print(f"fabricprobe: could not mark the run aborted: {exc}", file=sys.stderr, flush=True)
        else:
            time.sleep(_GRACE_NON_ROOT + _GATHER_S)
        try:
            if self._abort is not None:
                self._abort(EXIT_WATCHDOG)
        finally:
            os._exit(EXIT_WATCHDOG)


def _top(found: dict | None) -> str:
    """ "; at file:line in function" of the innermost fabricprobe frame of the main thread's stack. The
    report is written by the watchdog's own thread, which faulthandler lists first ("Current thread"):
    taking the first stack named the watchdog itself on every rank, so that one is skipped and the
    thread whose outermost frame is the program's (<module>) taken. A report with no other thread says
    no place: naming the watchdog's own frames would say the rank was in the watchdog."""
    if not found:
        return ""
    groups: list[tuple[bool, list[str]]] = []
    for line in (line.strip() for line in found["stack"].splitlines()):
        if line.startswith(("Current thread", "Thread")):  # "Thread 0x... (most recent call first):"
            groups.append((line.startswith("Current"), []))
        elif line.startswith("File ") and groups:
            groups[-1][1].append(line)
    others = [frames for current, frames in groups if not current and frames]
    main = next((f for f in others if f[-1].endswith("<module>")), others[-1] if others else [])
    ours = [line for line in main if "fabricprobe" in line] or main
    return f"; at {ours[0][5:]}" if ours else ""
