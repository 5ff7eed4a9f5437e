"""The MPI library's one-sided tests (specs/rma.py), OMB's loops, as the "library" algorithm.

The origin times each message (or window of messages) with its synchronization; the target takes
part where the synchronization needs it (fence, post-start-complete-wait) and otherwise waits for the
origin's word that the batch is over, so the data it validates is there. Natively (a compiled loop of
the call and MPI_Win_flush: OMB's default synchronization, for every test) or through mpi4py for every
test and synchronization.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

from fabricprobe.collectives.algorithm import LIBRARY, Algorithm
from fabricprobe.collectives.library import SUMMARY, _check, _native
from fabricprobe.specs import SPECS
from fabricprobe.specs.base import Case
from fabricprobe.specs.pt2pt import ROLE_INITIATOR, ROLE_RESPONDER
from fabricprobe.specs.rma import ORIGIN, TARGET, mpi_datatype
from fabricprobe.timing.batch import Batch, idle

_TAG_DONE = 19


def _operations(case: Case, win: Any, MPI: Any) -> list[Any]:
    """One call per message of an iteration (a window of them for the bandwidth tests)."""
    spec = SPECS[case.collective]
    dt, c = mpi_datatype(case, MPI), case.count
    if spec.kind == "put":
        return [
            partial(win.Put, [case.send[j * c : (j + 1) * c], dt], TARGET, [j * c, c, dt])
            for j in range(spec.messages(case))
        ]
    if spec.kind == "get":
        return [
            partial(win.Get, [case.recv[j * c : (j + 1) * c], dt], TARGET, [j * c, c, dt])
            for j in range(spec.messages(case))
        ]
    if spec.kind == "acc":
        return [partial(win.Accumulate, [case.send, dt], TARGET, [0, c, dt], MPI.SUM)]
    if spec.kind == "fop":
        return [partial(win.Fetch_and_op, [case.send, dt], [case.recv, dt], TARGET, 0, MPI.SUM)]
    compare = np.array([1000 + case.peer], dtype=case.dtype)  # the target's first value (specs.rma)
    return [partial(win.Compare_and_swap, [case.send, dt], [compare, dt], [case.recv, dt], TARGET, 0)]


def python_rma(case: Case) -> Batch:
    from mpi4py import MPI

    if len(case.keep) != 3 or case.role < 0:
        return idle
    pair, win, _ = case.keep
    sync, wtime = case.sync, MPI.Wtime
    other = pair.group.Incl([TARGET if case.role == ROLE_INITIATOR else ORIGIN])
    if case.role == ROLE_RESPONDER:

        def target(out: np.ndarray, mode: int) -> None:
            pair.Barrier()
            if sync == "fence":
                win.Fence()
            for i in range(len(out)):
                if sync == "fence":
                    win.Fence()
                elif sync == "pscw":
                    win.Post(other)
                    win.Wait()
                out[i] = np.nan
            pair.Recv([np.empty(0, np.uint8), MPI.BYTE], ORIGIN, _TAG_DONE)

        return target

    ops = _operations(case, win, MPI)
    count = len(ops)

    def origin(out: np.ndarray, mode: int) -> None:
        pair.Barrier()
        if sync in ("flush", "flush_local"):
            win.Lock(TARGET, MPI.LOCK_SHARED)
        elif sync == "fence":
            win.Fence()
        for i in range(len(out)):
            t0 = wtime()
            if sync == "lock":
                win.Lock(TARGET, MPI.LOCK_SHARED)
            elif sync == "lock_all":
                win.Lock_all()
            elif sync == "pscw":
                win.Start(other)
            for op in ops:
                op()
            if sync == "flush":
                win.Flush(TARGET)
            elif sync == "flush_local":
                win.Flush_local(TARGET)
            elif sync == "lock":
                win.Unlock(TARGET)
            elif sync == "lock_all":
                win.Unlock_all()
            elif sync == "fence":
                win.Fence()
            else:
                win.Complete()
            out[i] = (wtime() - t0) / count
        if sync in ("flush", "flush_local"):
            win.Unlock(TARGET)
        pair.Send([np.empty(0, np.uint8), MPI.BYTE], TARGET, _TAG_DONE)

    return origin


def _native_loop(case: Case, nat: Any, MPI: Any) -> Callable[[np.ndarray], int]:
    """The compiled loop of the case's one-sided call with flush, as a function of the output times:
    puts or gets to consecutive blocks, or one accumulate, fetch-and-op or compare-and-swap."""
    from fabricprobe.timing import compiled  # llvmlite's, once MPI has started (engine/session.py)

    spec = SPECS[case.collective]
    pair, win, _ = case.keep
    dt, w, comm = nat.handle(mpi_datatype(case, MPI)), nat.handle(win), nat.handle(pair)
    first = (nat.wtime, nat.barrier, comm)
    send, recv = int(case.send.ctypes.data), int(case.recv.ctypes.data)
    if spec.kind in ("put", "get"):
        op, base = (nat.put, send) if spec.kind == "put" else (nat.get, recv)
        stride, windows = case.count * case.send.dtype.itemsize, spec.messages(case)
        return partial(compiled.native_rma, *first, op, nat.win_flush, base, stride, case.count, dt, TARGET, w, windows)
    total = nat.handle(MPI.SUM)
    if spec.kind == "acc":
        return partial(
            compiled.native_accumulate, *first, nat.accumulate, nat.win_flush, send, case.count, dt, total, TARGET, w
        )
    if spec.kind == "fop":
        return partial(
            compiled.native_fetch_and_op, *first, nat.fetch_and_op, nat.win_flush, send, recv, dt, total, TARGET, w
        )
    compare = np.array([1000 + case.peer], dtype=case.dtype)  # the target's first value (specs.rma)

    def compare_and_swap(out: np.ndarray, compare: np.ndarray = compare) -> int:  # holds `compare` alive
        at = int(compare.ctypes.data)
        return compiled.native_compare_and_swap(
            *first, nat.compare_and_swap, nat.win_flush, send, at, recv, dt, TARGET, w, out
        )

    return compare_and_swap


def compiled_rma(case: Case) -> Batch:
    """Any one-sided test with flush (OMB's default synchronization), natively: the compiled loop
    between a shared lock and its unlock."""
    from mpi4py import MPI

    nat = _native(MPI)
    if len(case.keep) != 3 or case.role < 0:
        return idle
    if case.role == ROLE_RESPONDER:
        return python_rma(case)  # the target only waits: nothing of it is timed
    pair, win, _ = case.keep
    loop = _native_loop(case, nat, MPI)

    def origin(out: np.ndarray, mode: int) -> None:
        win.Lock(TARGET, MPI.LOCK_SHARED)
        rc = loop(out)
        win.Unlock(TARGET)
        _check(rc, nat)
        pair.Send([np.empty(0, np.uint8), MPI.BYTE], TARGET, _TAG_DONE)

    return origin


ALGORITHMS = tuple(
    Algorithm(LIBRARY, spec.name, SUMMARY, compiled=compiled_rma, loop=python_rma, buffers=("host",))
    for spec in SPECS.values()
    if spec.rma
)
