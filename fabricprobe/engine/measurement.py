"""A sweep once MPI has started and every rank agrees on its options (engine/session.py): the results
file checked (or the run to resume loaded), topology and device set up before anything is timed,
provenance recorded, every point measured and stored, the bound probe, and the run's end.

Its modules are imported after MPI_Init, read once by rank 0 for every rank (mpienv/shared_imports.py)."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass, replace
from typing import Any

from fabricprobe.engine import bound_probe, faults
from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.device_point import DeviceContext
from fabricprobe.engine.gpudirect import direct_reason
from fabricprobe.engine.served import ServedBy
from fabricprobe.engine.sweep import execute
from fabricprobe.engine.watchdog import Watchdog
from fabricprobe.errors import INTERRUPTED_STATUSES, UsageError
from fabricprobe.memory import arena
from fabricprobe.mpienv import provenance, topology
from fabricprobe.mpienv.launcher import launched_by_mpiexec
from fabricprobe.mpienv.spinning import spin_warning
from fabricprobe.mpienv.waiting import quiet_barrier, root_decides
from fabricprobe.store.schema import STATUS_COMPLETE, STATUS_RUNNING
from fabricprobe.timing import windows


@dataclass
class SessionOutcome:
    exit_code: int
    path: str
    run_id: str | None  # rank 0 only
    failed: int  # points that failed validation or raised errors
    is_root: bool


def measure(job: Any, MPI: Any, comm: Any) -> SessionOutcome:
    """The sweep `job` (engine/session.py's _Job: options, file, progress, watchdogs) asks for, on every
    rank of `comm`; rank 0 writes."""
    config, path, resume, run_id, progress, warn = job.config, job.path, job.resume, job.run_id, job.progress, job.warn
    done: list[str] = []
    resumed_at: list[str] = []
    shape: dict = {}
    if resume:

        def load() -> tuple:
            from fabricprobe.store import check_results_file

            check_results_file(path)
            job.open_writer()
            return _load_resume(path, run_id, comm.size, MPI)

        run_id, stored, done, resumed_at, shape = root_decides(comm, load)
        if stored.thread_level != config.thread_level:
            raise UsageError(f"the run used --thread-level {stored.thread_level}; resume it with the same level")
        arena.check_applied(stored.early_buffers)
        config = stored
        warn(f"resuming run {run_id} of {path}: {len(done)} points done; its stored options are used")
    else:
        root_decides(comm, lambda: (_check_output_path(path), job.open_writer()))
    if config.order == "random" and config.seed < 0:  # rank 0's draw, stored with the run: reproducible
        import secrets

        config = replace(config, seed=comm.bcast(secrets.randbits(32) if comm.rank == 0 else None, root=0))
    if config.library_variants and job.switch is None:
        raise UsageError(
            "this run switches the library's algorithms at run time (tune-sweep's one launch): "
            "finish it with `fabricprobe tune-sweep --resume`, not sweep"
        )
    if config.root >= comm.size:
        raise UsageError(f"--root {config.root} is not a rank of this {comm.size}-rank job")
    larger = sorted({s for s in config.comm_sizes or [] if s > comm.size})
    if larger:  # was a note in the report's header, easy to miss: the points the user asked for were not measured
        raise UsageError(f"--comm-sizes {','.join(map(str, larger))}: larger than this {comm.size}-rank job")
    job.phase("topology")
    faults.hang_if_asked("setup", comm.rank)
    topo = topology.detect(comm)
    if resume:
        _same_shape(shape, topo, path, run_id)  # every rank holds the same stored shape and topology
    memory = _device_memory(comm, config.buffer, topo.local_rank[comm.rank]) if config.buffer != "host" else None
    if config.ranks_per_node:
        topo = topology.virtual(topo, topology.node_sizes(config.ranks_per_node, comm.size))
    topology.set_active(comm, topo)
    topology.hierarchy(comm)  # communicator splits happen here, not inside a timed point
    if comm.size == 1 and not launched_by_mpiexec():  # after every refusal: an error stays one line
        warn(
            "running as one process (no mpiexec): collectives run at n=1 and point-to-point tests are "
            "skipped; use `mpiexec -n N fabricprobe sweep` to measure the fabric"
        )
    job.phase("provenance")
    prov = provenance.collect(MPI, comm, topo, config.thread_level, asked=job.asked)
    writer = job.writer
    served = ServedBy(MPI, prov["mpi_vendor"], topo) if writer is not None else None
    if served is not None:
        prov |= served.provenance(comm.size)
    if writer is not None:
        if run_id is None:
            run_id = writer.start_run(
                {
                    **prov,
                    "config": config.to_dict(),
                    "started": provenance.utc_now(),
                    "command": "sweep",
                    "status_reason": "",
                    "notes": [],
                    "resumed_at": [],
                }
            )
        else:
            writer.attach(run_id)
            writer.update_run(
                {"status": STATUS_RUNNING, "resumed_at": resumed_at + [provenance.utc_now()], "status_reason": ""}
            )
        if prov["oversubscribed"]:
            hw = topo.hardware
            crowded = [(r, c) for r, c in zip(hw.ranks_per_node, hw.cores_per_node) if r > c]
            if crowded:
                ranks, cores = max(crowded, key=lambda rc: rc[0] / max(rc[1], 1))
                where = f"{ranks} ranks on {cores} cores of one node"
            else:  # the fabric lab: emulated nodes share one machine's cores
                where = f"{comm.size} ranks on this machine's {os.cpu_count()} cores (emulated nodes)"
            warn(f"oversubscribed: {where}; times will include scheduler waits")
            spinning = spin_warning(prov)
            if spinning:
                warn(spinning)
            if "window" in config.modes:
                warn(
                    "window mode needs a core per rank: ranks that share cores are descheduled for longer "
                    "than a window (4 ranks on 2 cores missed 73-100% of their windows); missed windows "
                    "are not timed"
                )
        if "disagrees" in prov["placement_check"]:
            warn(f"the launcher's placement and the shared-memory nodes differ: {prov['placement_check']}")
        if provenance.build_mismatch(prov):
            warn(provenance.build_mismatch(prov))
        if prov["thread_level_provided"] != config.thread_level:
            warn(f"requested thread level {config.thread_level}, the library provided {prov['thread_level_provided']}")
    quiet_barrier(comm)  # the others sleep while rank 0 asks the library's build and writes the run's start
    device = None
    if memory is not None:
        # Rank 0's answer for every rank: ranks that disagreed would part ways inside a collective.
        root = comm.rank == 0  # rank 0 alone asks the library (provenance.collect)
        mine = direct_reason(prov["cuda_aware"], prov["cuda_aware_method"], config.assume_cuda_aware) if root else None
        reason = comm.bcast(mine, root=0)
        device = DeviceContext(memory, reason, config.stage_chunk)
        if writer is not None and reason and config.gpudirect != "off":
            warn(f"GPUDirect points will be recorded as not runnable: {reason}")
    sync = _synchronize_clocks(config, MPI, comm) if "window" in config.modes else None
    job.setup_done()  # the points have their own watchdog
    reports = f"{path}.watchdog-{provenance.utc_now().replace(':', '')}"  # where each rank reports a hang
    reports = comm.bcast(reports, root=0)
    outcome = execute(
        config, MPI, comm, topo, writer, set(done) | job.skip, progress, device, job.switch, reports, served
    )
    if sync is not None:
        sync.update(_residual_at_end(MPI, comm))
    probe = {}
    if outcome.exit_code not in INTERRUPTED_STATUSES and bound_probe.wanted(config, comm.size):
        watch = Watchdog(config.point_timeout, comm.rank)
        watch.arm("the bound probe (point-to-point latency and bandwidth)")
        try:
            probe = bound_probe.measure(config, MPI, comm, topo)
        finally:
            watch.stop()
    rss = comm.gather(peak_rss_mib(), root=0)  # what the sweep cost in memory, rank 0 (the collector) apart
    buffers = comm.gather(arena.record(), root=0)  # each rank's memory written before its message buffers
    if writer is not None:
        writer.update_run(
            {
                "status": STATUS_COMPLETE,
                "ended": provenance.utc_now(),
                "notes": outcome.notes,
                "rank0_peak_rss_mib": round(rss[0], 1),
                "peak_rss_mib": round(max(rss), 1),
                "buffer_memory": {key: [b[key] for b in buffers] for key in buffers[0]},
                "numba_version": provenance.loaded_version("numba"),  # own algorithms' kernels load it
                **({"bound_probe": probe} if probe else {}),
                **({"clock_sync": sync} if sync is not None else {}),
                **({"runtime_switch": job.switch.record()} if job.switch is not None else {}),
            }
        )
    return SessionOutcome(outcome.exit_code, path, run_id, outcome.failed, comm.rank == 0)


def _synchronize_clocks(config: SweepConfig, MPI: Any, comm: Any) -> dict:
    """Window mode: every rank's clock mapped onto rank 0's (timing/windows.py), and what that left:
    the residual offset per rank right after it. Rank 0's record (other ranks': {})."""
    started = MPI.Wtime()
    model, history = windows.synchronize(comm, MPI.Wtime)
    clock = windows.WindowClock(MPI.Wtime, model, history=history)
    clock.fitted_at = clock.now()
    windows.set_clock(clock)
    after = windows.residuals(comm, MPI.Wtime, model)
    drifts = comm.gather(model.b * 1e6, root=0)
    if comm.rank != 0:
        return {}
    return {
        "method": "Jones & Koenig linear model against rank 0: 8 fitpoints of 20 ping-pongs over 0.5 s, "
        "then one of 10 before each batch of windows (the line through the last 64)",
        "seconds": MPI.Wtime() - started,
        "drift_ppm": drifts,
        "residual_after_sync_s": after,
    }


def _residual_at_end(MPI: Any, comm: Any) -> dict:
    """The residual offsets again after the sweep, and how long after the synchronization."""
    clock = windows.clock()
    after = MPI.Wtime() - clock.model.to_local(clock.fitted_at)
    found = windows.residuals(comm, MPI.Wtime, clock.model)
    drifts = comm.gather(clock.model.b * 1e6, root=0)
    windows.set_clock(None)
    return {"residual_at_end_s": found, "end_after_s": after, "drift_ppm_at_end": drifts} if comm.rank == 0 else {}


def peak_rss_mib() -> float:
    """This process's peak resident memory (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _same_library(run: Any, MPI: Any, path: str) -> None:
    """--resume with the library, version and job shape the run was measured with, or not at all: points
    of another library would be stored under the first one's name."""
    from fabricprobe.mpienv.library import library_info

    lib = library_info(MPI)
    stored = (str(run.attrs.get("mpi_vendor", "")), str(run.attrs.get("mpi_library_version", "")))
    if stored != (lib.vendor, lib.version_string):
        version = stored[1].splitlines()[0].strip() if stored[1] else "?"
        now = lib.version_string.splitlines()[0].strip() if lib.version_string else "?"
        raise UsageError(
            f"run {run.id} in {path} was measured with {stored[0]} ({version}); this is {lib.vendor} ({now}): "
            "resume it with the library it was measured with"
        )


def _same_shape(shape: dict, topo: Any, path: str, run_id: str) -> None:
    """The resumed run's nodes: ranks per node as stored against this job's."""
    stored = shape.get("ranks_per_node")
    if isinstance(stored, str):
        import json

        stored = json.loads(stored) if stored.startswith("[") else None
    now = list(topo.hardware.ranks_per_node)
    if isinstance(stored, list) and [int(x) for x in stored] != now:
        raise UsageError(
            f"run {run_id} in {path} was measured with ranks per node {stored}; this job has {now}: "
            "resume it on the same job shape"
        )


def _check_output_path(path: str) -> None:
    from fabricprobe.store import check_output_path

    check_output_path(path)


def _load_resume(path: str, run_id: str | None, nranks: int, MPI: Any) -> tuple:
    """(run id, its config, the keys measured, when it was resumed before, its job shape)"""
    from fabricprobe.store import load_runs, select_run

    run = select_run(load_runs(path), run_id, path)
    _same_library(run, MPI, path)
    if run.status == STATUS_COMPLETE:
        raise UsageError(f"run {run.id} in {path} is complete; nothing to resume")
    if int(run.attrs.get("nranks", -1)) != nranks:
        raise UsageError(
            f"run {run.id} in {path} was measured with {run.attrs.get('nranks')} ranks; "
            f"resume it with mpiexec -n {run.attrs.get('nranks')}"
        )
    config = SweepConfig.from_dict(run.config)
    done = [p["key"] for p in run.points]
    shape = {"ranks_per_node": run.attrs.get("ranks_per_node")}
    return run.id, config, done, list(run.attrs.get("resumed_at") or []), shape


def _device_memory(comm: Any, kind: str, local_rank: int) -> Any:
    """The --buffer memory on every rank, each on its own GPU where the node has enough; one clear
    UsageError (every rank raises it) when any rank cannot have it."""
    from fabricprobe.memory import BufferUnavailable, memory_for, select_device

    try:
        memory, error = memory_for(kind), ""
    except BufferUnavailable as exc:
        memory, error = None, str(exc)
    failed = [(rank, e) for rank, e in enumerate(comm.allgather(error)) if e]
    if failed:
        rank, message = failed[0]
        raise UsageError(message + (f" (on rank {rank})" if comm.size > 1 else ""))
    select_device(memory, local_rank)
    return memory
