"""Run a planned sweep on every rank; rank 0 stores each point as soon as it completes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.device_point import DeviceContext
from fabricprobe.engine.plan import make_plan
from fabricprobe.engine.point import run_point
from fabricprobe.engine.progress import SweepProgress
from fabricprobe.engine.served import ServedBy
from fabricprobe.engine.switching import LibrarySwitch, forced_by, variant_of
from fabricprobe.engine.watchdog import Watchdog
from fabricprobe.errors import EXIT_OK, EXIT_WRONG
from fabricprobe.memory.heap import release_freed
from fabricprobe.mpienv.topology import Topology
from fabricprobe.oracle import patterns
from fabricprobe.store.schema import STATUS_ABORTED

if TYPE_CHECKING:
    from fabricprobe.store import ResultsWriter
from fabricprobe.timing import native
from fabricprobe.timing.choice import floor_timers


@dataclass
class SweepOutcome:
    exit_code: int
    measured: int
    failed: int
    notes: list[str]


def execute(
    config: SweepConfig,
    MPI: Any,
    comm: Any,
    topo: Topology,
    writer: ResultsWriter | None,
    done: set[str],
    progress_style: str,
    device: DeviceContext | None = None,
    switch: LibrarySwitch | None = None,
    reports: str | None = None,
    served: ServedBy | None = None,
) -> SweepOutcome:
    """Measure every planned point not in `done`; writer is rank 0's (None elsewhere); `device` is set
    for device buffers (--buffer cupy/numba); `switch` switches the library's algorithm before each
    point (config.library_variants), and is back at the default when this returns; `reports`: the
    folder where every rank says where it is if the watchdog fires (beside the results file); `served`
    (rank 0's) names the library component that served each point."""
    points, notes = make_plan(config, topo, floor_timers(config.timer, native.failure(MPI)))
    root = comm.rank == 0
    if writer is not None:  # what a reader of a journal cut short compares the points it has with
        writer.update_run({"planned_points": len(points)})

    def mark_aborted(label: str, ranks: dict | None = None) -> None:
        if writer is not None:
            where = {str(r): v for r, v in (ranks or {}).items()}
            writer.update_run({"status": STATUS_ABORTED, "status_reason": f"watchdog: {label}", "watchdog": where})

    # MPI_Abort from the watchdog's thread only where the standard allows it (MPI_THREAD_MULTIPLE);
    # otherwise the watchdog ends the process and the launcher ends the job.
    abort = comm.Abort if MPI.Query_thread() == MPI.THREAD_MULTIPLE else None
    watchdog = Watchdog(
        config.point_timeout, comm.rank, abort, on_timeout=mark_aborted, reports=reports, nranks=comm.size
    )
    comms = _sub_communicators(comm, topo, sorted({p.nranks for p in points if p.nranks}), MPI)
    measured = failed = 0
    current = 0
    kept_for: tuple = ()
    progress = SweepProgress(progress_style if root else "none", len(points))
    try:
        with progress:
            for text in notes:
                progress.note(text)
            progress.skip(sum(1 for p in points if p.key in done))
            for point in points:
                if point.key in done:
                    continue
                if point.nranks != current:  # a new communicator size: ranks outside it wait here
                    comm.Barrier()
                    current = point.nranks
                if (point.collective, point.requested_bytes) != kept_for:
                    patterns.forget()  # the oracle's arrays of the last (collective, size) are no use now
                    kept_for = (point.collective, point.requested_bytes)
                sub, sub_topo = comms.get(point.nranks, (comm, topo))
                if sub is None:
                    continue
                progress.starting(point.label)
                watchdog.arm(f"point {point.index} ({point.label})")
                idle = ""
                if switch is not None:  # the switch may hang too: under the point's watchdog
                    idle = switch.not_here(point.collective, variant_of(point.algorithm), sub)
                    if not idle:
                        sub = switch.select(point.collective, variant_of(point.algorithm), sub)
                how = forced_by(point.algorithm, config, switch)
                result = run_point(point, config, sub, MPI, sub_topo, device, how, not_here=idle)
                watchdog.disarm()
                if writer is not None:
                    if served is not None:
                        if switch is not None:
                            served.refresh()  # the point's own settings, as the switch left them
                        row = result.row
                        row["served_by"] = served.of(row["collective"], row["algorithm"], row["nranks"])
                    writer.append_point(result.row, result.times)
                progress.finished(point.label, result.row)
                measured += 1
                failed += int(result.failed)
                del result
                release_freed()  # the point's buffers back to the system (memory/heap.py: 19.7 GB at 64 ranks)
        if switch is not None:
            switch.restore()
        comm.Barrier()
    finally:
        watchdog.stop()
    failed = comm.allreduce(failed, op=MPI.MAX)  # ranks outside a sub-communicator saw none of its points
    return SweepOutcome(EXIT_WRONG if failed else EXIT_OK, measured, failed, notes)


def _sub_communicators(comm: Any, topo: Topology, sizes: list[int], MPI: Any) -> dict[int, tuple[Any, Topology | None]]:
    """size -> (communicator of the first `size` ranks, its topology), or (None, None) on other ranks.
    Under a virtual topology a sub-communicator keeps the world's pretend nodes, cut at `size` ranks
    (2 × 2 at 4 ranks is one node of 2 at 2 ranks): detecting it again would give the hardware's."""
    from fabricprobe.mpienv import topology

    out: dict[int, tuple[Any, Topology | None]] = {}
    for size in sizes:
        inside = comm.rank < size
        sub = comm.Split(0 if inside else MPI.UNDEFINED, comm.rank)
        if inside:
            sub_topo = topology.detect(sub)
            if topo.virtual:
                sub_topo = topology.virtual(sub_topo, topology.prefix_sizes(topo.ranks_per_node, size))
            topology.set_active(sub, sub_topo)
            topology.hierarchy(sub)
            out[size] = (sub, sub_topo)
        else:
            out[size] = (None, None)
    return out
