"""Run a planned sweep on every rank; rank 0 stores each point as soon as it completes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fabricprobe import native
from fabricprobe.config import SweepConfig
from fabricprobe.errors import EXIT_OK, EXIT_WRONG
from fabricprobe.plan import make_plan
from fabricprobe.point import run_point
from fabricprobe.progress import SweepProgress
from fabricprobe.store import ResultsWriter
from fabricprobe.store.schema import STATUS_ABORTED
from fabricprobe.topology import Topology
from fabricprobe.watchdog import Watchdog


@dataclass
class SweepOutcome:
    exit_code: int
    measured: int
    failed: int
    notes: list[str]


def timers_in_use(config: SweepConfig, MPI: Any) -> list[str]:
    """Timers whose floor the run records: the native one if any point can use it, and python."""
    timers = []
    if config.timer != "python" and native.load(MPI) is not None:
        timers.append("native")
    timers.append("python")
    return timers


def execute(config: SweepConfig, MPI: Any, comm: Any, topo: Topology, writer: ResultsWriter | None,
            done: set[str], progress_style: str) -> SweepOutcome:
    """Measure every planned point not in `done`; writer is rank 0's (None elsewhere)."""
    points, notes = make_plan(config, topo, timers_in_use(config, MPI))
    root = comm.rank == 0

    def mark_aborted(label: str) -> None:
        if writer is not None:
            writer.update_run({"status": STATUS_ABORTED, "status_reason": f"watchdog: {label}"})

    watchdog = Watchdog(config.point_timeout, comm.rank, comm.Abort, on_timeout=mark_aborted)
    measured = failed = 0
    progress = SweepProgress(progress_style if root else "none", len(points))
    try:
        with progress:
            for text in notes:
                progress.note(text)
            progress.skip(sum(1 for p in points if p.key in done))
            for point in points:
                if point.key in done:
                    continue
                progress.starting(point.label)
                watchdog.arm(f"point {point.index} ({point.label})")
                result = run_point(point, config, comm, MPI, topo)
                watchdog.disarm()
                if writer is not None:
                    writer.append_point(result.row, result.samples)
                progress.finished(point.label, result.row)
                measured += 1
                failed += int(result.failed)
    finally:
        watchdog.stop()
    return SweepOutcome(EXIT_WRONG if failed else EXIT_OK, measured, failed, notes)
