"""Measure one point on every rank: buffers, validation (outside the timed region), timing."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricprobe.collectives import LIBRARY
from fabricprobe.collectives.library import overlap_batch
from fabricprobe.engine import device_point, faults, harness, validation
from fabricprobe.engine.config import SweepConfig
from fabricprobe.engine.device_point import DeviceContext
from fabricprobe.engine.overlap import measure_overlap
from fabricprobe.engine.plan import PlannedPoint, pair_ranks
from fabricprobe.mpienv.datatypes import numpy_dtype
from fabricprobe.mpienv.topology import Topology
from fabricprobe.sizes import format_size
from fabricprobe.sparse import traffic
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case
from fabricprobe.stats import PointTimes, bandwidths, summarize
from fabricprobe.store.schema import EMPTY, POINT_ERROR, POINT_NOT_RUNNABLE, POINT_OK, POINT_WRONG
from fabricprobe.timing import compiled, loops, native
from fabricprobe.timing.batch import TimerUnavailable
from fabricprobe.timing.choice import timer_for


@dataclass
class PointResult:
    row: dict[str, Any] | None  # rank 0 only
    times: PointTimes | None  # rank 0 only
    failed: bool  # wrong elements or an error, on any rank


def pair_of(rank: int, pair: str, topo: Topology) -> tuple[int, bool] | None:
    """(peer, first-of-pair) for a point-to-point test, None when this rank sits it out.

    intra: the first two ranks of the first node holding two; inter: the first ranks of the first
    two nodes (the pair crosses the fabric); all: ranks r and r + n/2, concurrently.
    """
    for first, second in pair_ranks(pair, topo) or []:
        if rank == first:
            return second, True
        if rank == second:
            return first, False
    return None


def _empty_batch(timer: str, comm: Any, MPI: Any):
    if timer == "native":
        nat = native.load(MPI)
        handle = nat.handle(comm)
        return lambda out, mode: compiled.native_empty(nat.wtime, nat.barrier, handle, mode, out)
    return lambda out, mode: loops.python_empty(comm.Barrier, MPI.Wtime, mode, out)


class _NotRunnable(Exception):
    """This point cannot run in this setting; every rank reaches the same reason (it is recorded)."""


def _allocate_everywhere(spec: Any, case: Case, comm: Any, MPI: Any) -> None:
    """The point's buffers on every rank, or _NotRunnable on every rank when any rank cannot have them
    (a size too large for memory is recorded and skipped, not a traceback; the ranks must agree, or the
    ones that could allocate would wait in the first collective for the one that could not)."""
    try:
        spec.allocate(case)
        reason = ""
    except (MemoryError, OSError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        reason = f"cannot allocate the buffers of {format_size(case.layout.nbytes)}: {why}"
    reasons = comm.allgather(reason)
    failed = [(rank, r) for rank, r in enumerate(reasons) if r]
    if failed:
        rank, why = failed[0]
        case.send = case.recv = None  # give back what this rank did get
        raise _NotRunnable(f"{why} (rank {rank})")


def run_point(
    point: PlannedPoint,
    config: SweepConfig,
    comm: Any,
    MPI: Any,
    topo: Topology,
    device: DeviceContext | None = None,
    forced_by: str = "",
    not_here: str = "",
) -> PointResult:
    """Measure one point on every rank of comm; `device` is the sweep's device setting for --buffer
    cupy/numba; `forced_by` says how the library's algorithm was forced (engine.switching.forced_by);
    `not_here`: why the point is recorded not runnable without a call (LibrarySwitch.not_here)."""
    started = time.time()
    mode = loops.MODES.get(point.mode, loops.LOOP)  # a one-sided test's mode is its synchronization
    budget = harness.Budget(
        iterations=config.iterations_for(point.layout.nbytes),
        warmup=config.warmup_for(point.layout.nbytes),
        max_time=config.max_time,
        ci_target=config.ci_target,
        min_iterations=config.min_iterations,
    )
    tally = validation.Tally()
    overlap = None  # non-blocking collectives: engine.overlap's measurement, on rank 0
    case = None
    bytes_sent = result_nnz = -1
    note = ""
    error = ""
    unrunnable = ""
    dev = None  # the device twin of the case, for --buffer cupy/numba
    factor = 0.0
    try:
        if point.collective == EMPTY:
            timer = point.algorithm
            batch = _empty_batch(timer, comm, MPI)
            validated = False
        else:
            spec = SPECS[point.collective]
            algorithm = point.implementation
            on_device = device is not None and point.buffer != "host" and spec.sized
            timer = timer_for(
                config.timer,
                f"{point.collective}/{point.algorithm}",
                algorithm.native and spec.native_timer(point.mode),
                native.failure(MPI),
                on_device,
            )
            if not_here:
                raise _NotRunnable(not_here)
            case = Case(
                collective=point.collective,
                comm=comm,
                rank=comm.rank,
                nranks=comm.size,
                dtype_name=point.dtype,
                dtype=numpy_dtype(point.dtype),
                op=point.op,
                root=config.root,
                in_place=point.in_place,
                layout=point.layout,
                window=config.window,
                hugepages=config.hugepages,
                density=point.density,
                semantics=algorithm.semantics,
                sync=point.mode if spec.rma else "",
            )
            if spec.pt2pt:
                pairing = pair_of(comm.rank, point.pair, topo)
                if pairing is not None:
                    case.peer, first = pairing
                    case.role = spec.roles(first)
            _allocate_everywhere(spec, case, comm, MPI)
            spec.prepare(case)  # inputs exist before the algorithm is bound to them
            factor = spec.busbw_factor_on(comm.size, on_device)
            if on_device:
                dev = device_point.twin(case, device.memory)
                unrunnable = device_point.unrunnable(point, algorithm, dev, device)
            if unrunnable:
                raise _NotRunnable(unrunnable)
            batch = (
                algorithm.bind(case, timer) if dev is None else device_point.device_batch(point, algorithm, dev, device)
            )
            faults.hang_if_asked(point.collective, comm.rank, point.algorithm)
            faults.fail_if_asked(point.collective, point.algorithm)
            validated = config.validate
            traffic.reset()
            if validated:
                for _ in range(config.check_iters):
                    spec.prepare(case)
                    if dev is not None:
                        device_point.load(case, dev, device.memory)
                    kept = validation.snapshot(spec, case, dev)
                    batch(np.empty(1), loops.BARRIER)
                    tally.first_call(spec, case, dev, device, kept)
                    del kept
                sent = traffic.sent() // config.check_iters
            else:
                spec.prepare(case)
                if dev is not None:
                    device_point.load(case, dev, device.memory)
                if spec.sparse and not spec.local:
                    batch(np.empty(1), loops.BARRIER)  # one untimed call to count its traffic
                sent = traffic.sent()
            if spec.sparse and not spec.local:
                bytes_sent = sent
                result_nnz = case.recv.nnz
        measurement = harness.measure(batch, comm, budget, mode)
        if validated and validation.steady_checkable(spec, point):
            tally.after_timed_calls(spec, case, dev, device)
        if point.collective != EMPTY and spec.nonblocking and dev is None and point.algorithm == LIBRARY:
            pure = float(np.median(measurement.times.iteration_times())) if comm.rank == 0 else None
            overlap = measure_overlap(
                lambda seconds: overlap_batch(case, timer, seconds), comm, pure, measurement.iterations
            )
    except _NotRunnable as exc:
        unrunnable = str(exc)
        measurement = None
        validated = False
    except (TimerUnavailable, MPI.Exception, RuntimeError) as exc:
        error = f"{type(exc).__name__}: {exc}"
        measurement = None
        timer = config.timer
        validated = False
    finally:
        if case is not None:
            SPECS[point.collective].release(case)

    errors = comm.gather(error, root=0)
    bytes_sent = comm.reduce(bytes_sent, op=MPI.MAX, root=0)
    totals = comm.reduce(tally.totals(), op=MPI.SUM, root=0)
    wrong = 0
    if comm.rank == 0:
        note = validation.note_of(totals, tally.steady_checked) or note
        wrong = validation.wrong_of(totals)
    any_failed = comm.bcast(bool(any(errors) or wrong > 0) if comm.rank == 0 else None, root=0)
    if comm.rank != 0:
        return PointResult(None, None, any_failed)

    first_error = next((f"rank {r}: {e}" for r, e in enumerate(errors) if e), "")
    row: dict[str, Any] = dict(
        index=point.index,
        key=point.key,
        collective=point.collective,
        dtype=point.dtype,
        algorithm=(
            f"{LIBRARY}:{config.library_variant}"
            if config.library_variant and point.algorithm == LIBRARY
            else point.algorithm
        ),
        forced_by=forced_by,
        op=point.op,
        in_place=point.in_place,
        root=config.root,
        mode=point.mode,
        timer=timer,
        nranks=comm.size,
        requested_bytes=point.requested_bytes,
        bytes=point.layout.nbytes,
        count=point.layout.count,
        pair=point.pair,
        warmup=budget.warmup,
        busbw_factor=factor,
        wrong=wrong if validated else -1,
        density=point.density,
        bytes_sent=bytes_sent,
        result_nnz=result_nnz,
        buffer=point.buffer,
        transfer=point.transfer,
        checked=int(totals[1]),
        started_unix=started,
    )
    times = None
    if unrunnable and not first_error:
        row.update(status=POINT_NOT_RUNNABLE, note=unrunnable[:200])
    elif first_error:
        row.update(status=POINT_ERROR, note=first_error[:200])
    else:
        times = measurement.times
        summary = summarize(times)
        algbw, busbw = bandwidths(point.layout.nbytes, summary.median_s, factor)
        row.update(summary.as_dict())
        row.pop("n")
        row.update(
            iterations=measurement.iterations,
            batches=measurement.batches,
            stop_reason=measurement.stop_reason,
            window_s=measurement.window_s,
            windows_missed=measurement.windows_missed,
            algbw_gbps=algbw,
            busbw_gbps=busbw,
            status=POINT_WRONG if wrong > 0 else POINT_OK,
            note=note,
        )
        if overlap is not None:
            row.update(overall_s=overlap.overall_s, compute_s=overlap.compute_s, overlap_pct=overlap.percent)
        if measurement.windows_missed >= measurement.iterations > 0 and row["status"] == POINT_OK:
            # no window was kept on every rank: nothing timed (ranks that share cores are descheduled
            # for longer than a window: 4 or 8 ranks on 2 cores missed every window here)
            row.update(
                status=POINT_NOT_RUNNABLE,
                note=f"window mode: some rank reached every one of the {measurement.iterations} windows late "
                f"(w up to {measurement.window_s * 1e6:.3g} µs); nothing was timed",
            )
    row["duration_s"] = time.time() - started
    return PointResult(row, times, any_failed)
