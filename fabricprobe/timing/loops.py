"""Timing loops: Numba-compiled ones that call the MPI C API, and their Python twins.

Every loop fills `out` with one duration per iteration on this rank, in seconds:
- BARRIER mode: untimed MPI_Barrier, then one timed call (OMB/IMB comparable);
- LOOP mode: one barrier, then back-to-back calls, each iteration timed from the previous
  one's end (nccl-tests / OMB-Py comparable);
- WINDOW mode (ReproMPI's windows, timing/windows.py): `out[i]` holds, on entry, the moment on this
  rank's clock at which call i starts on every rank (the same global time, through the clock model);
  the rank waits for it, calls, and writes the time from that moment to its end. A rank that reaches
  the moment late still calls (every rank makes every call) and writes NaN: the window is missed, and
  the harness leaves it untimed on every rank.
Native loops return 0 or the first non-zero MPI error code; the Python ones raise.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit

BARRIER = 0
LOOP = 1
WINDOW = 2
MODES = {"barrier": BARRIER, "loop": LOOP, "window": WINDOW}

_TAG_DATA = 17
_TAG_ACK = 18


@njit(cache=True, nogil=True)
def native_timed_calls(wtime, barrier, comm, call, args, mode, out):  # pragma: no cover - compiled
    """Time `call(*args)` out.size times; `call` is any typed MPI C function."""
    n = out.size
    if mode == BARRIER:
        for i in range(n):
            rc = barrier(comm)
            if rc != 0:
                return rc
            t0 = wtime()
            rc = call(*args)
            out[i] = wtime() - t0
            if rc != 0:
                return rc
    elif mode == WINDOW:
        for i in range(n):
            start = out[i]
            late = wtime() > start
            while wtime() < start:
                pass
            rc = call(*args)
            out[i] = np.nan if late else wtime() - start
            if rc != 0:
                return rc
    else:
        rc = barrier(comm)
        if rc != 0:
            return rc
        prev = wtime()
        for i in range(n):
            rc = call(*args)
            now = wtime()
            out[i] = now - prev
            prev = now
            if rc != 0:
                return rc
    return 0


@njit(cache=True, nogil=True)
def native_timed_start_wait(wtime, barrier, comm, start, args, wait, req, status, mode, out):  # pragma: no cover
    """Time `start(*args)` then `wait(req, status)` out.size times: a non-blocking call (args end with
    req) or a persistent one (start is MPI_Start, args (req,)), completed at once; the modes as in
    native_timed_calls."""
    n = out.size
    if mode == BARRIER:
        for i in range(n):
            rc = barrier(comm)
            if rc != 0:
                return rc
            t0 = wtime()
            rc = start(*args)
            if rc == 0:
                rc = wait(req, status)
            out[i] = wtime() - t0
            if rc != 0:
                return rc
    elif mode == WINDOW:
        for i in range(n):
            begin = out[i]
            late = wtime() > begin
            while wtime() < begin:
                pass
            rc = start(*args)
            if rc == 0:
                rc = wait(req, status)
            out[i] = np.nan if late else wtime() - begin
            if rc != 0:
                return rc
    else:
        rc = barrier(comm)
        if rc != 0:
            return rc
        prev = wtime()
        for i in range(n):
            rc = start(*args)
            if rc == 0:
                rc = wait(req, status)
            now = wtime()
            out[i] = now - prev
            prev = now
            if rc != 0:
                return rc
    return 0


@njit(cache=True, nogil=True)
def native_rma(
    wtime, barrier, comm, op, flush, base, stride, count, dt, target, win, messages, out
):  # pragma: no cover
    """OMB's put/get loop with flush: after a barrier of the pair, per iteration `messages` calls of op
    (MPI_Put or MPI_Get: block j at base + j·stride, target displacement j·count) and MPI_Win_flush;
    out[i] is the time per message."""
    rc = barrier(comm)
    if rc != 0:
        return rc
    for i in range(out.size):
        t0 = wtime()
        for j in range(messages):
            rc = op(base + j * stride, count, dt, target, j * count, count, dt, win)
            if rc != 0:
                return rc
        rc = flush(target, win)
        out[i] = (wtime() - t0) / messages
        if rc != 0:
            return rc
    return 0


@njit(cache=True, nogil=True)
def native_accumulate(wtime, barrier, comm, op, flush, origin, count, dt, mpi_op, target, win, out):  # pragma: no cover
    """OMB's accumulate loop with flush: per iteration one MPI_Accumulate of `count` elements at
    target displacement 0 and MPI_Win_flush; out[i] is its time."""
    rc = barrier(comm)
    if rc != 0:
        return rc
    for i in range(out.size):
        t0 = wtime()
        rc = op(origin, count, dt, target, 0, count, dt, mpi_op, win)
        if rc == 0:
            rc = flush(target, win)
        out[i] = wtime() - t0
        if rc != 0:
            return rc
    return 0


@njit(cache=True, nogil=True)
def native_fetch_and_op(
    wtime, barrier, comm, op, flush, origin, result, dt, mpi_op, target, win, out
):  # pragma: no cover
    """OMB's fetch-and-op loop with flush: one MPI_Fetch_and_op at displacement 0 and MPI_Win_flush."""
    rc = barrier(comm)
    if rc != 0:
        return rc
    for i in range(out.size):
        t0 = wtime()
        rc = op(origin, result, dt, target, 0, mpi_op, win)
        if rc == 0:
            rc = flush(target, win)
        out[i] = wtime() - t0
        if rc != 0:
            return rc
    return 0


@njit(cache=True, nogil=True)
def native_compare_and_swap(
    wtime, barrier, comm, op, flush, origin, compare, result, dt, target, win, out
):  # pragma: no cover
    """OMB's compare-and-swap loop with flush: one MPI_Compare_and_swap at displacement 0 and
    MPI_Win_flush."""
    rc = barrier(comm)
    if rc != 0:
        return rc
    for i in range(out.size):
        t0 = wtime()
        rc = op(origin, compare, result, dt, target, 0, win)
        if rc == 0:
            rc = flush(target, win)
        out[i] = wtime() - t0
        if rc != 0:
            return rc
    return 0


@njit(cache=True, nogil=True)
def busy_compute(wtime, seconds):  # pragma: no cover - compiled
    """Computation that takes `seconds` of this core: multiply-adds on registers, the clock read every
    64 of them (OMB's dummy compute is a calibrated loop of the same kind)."""
    x = 1.0
    t0 = wtime()
    while wtime() - t0 < seconds:
        for _ in range(64):
            x = x * 1.0000001 + 1e-9
    return x


@njit(cache=True, nogil=True)
def native_overlap(wtime, barrier, comm, start, args, wait, req, status, seconds, out, out_compute):  # pragma: no cover
    """OMB's overlap loop: after a barrier, start the call, compute for `seconds`, wait; out[i] is the
    whole (OMB's Overall), out_compute[i] the computation alone."""
    sink = 0.0
    for i in range(out.size):
        rc = barrier(comm)
        if rc != 0:
            return rc
        t0 = wtime()
        rc = start(*args)
        if rc != 0:
            return rc
        tc = wtime()
        sink += busy_compute(wtime, seconds)
        out_compute[i] = wtime() - tc
        rc = wait(req, status)
        out[i] = wtime() - t0
        if rc != 0:
            return rc
    return 0 if sink == sink else 0


@njit(cache=True, nogil=True)
def native_empty(wtime, barrier, comm, mode, out):  # pragma: no cover - compiled
    """The harness floor: a timed region with nothing in it."""
    if mode == LOOP:
        barrier(comm)
    for i in range(out.size):
        if mode == BARRIER:
            barrier(comm)
        if mode == WINDOW:
            start = out[i]
            late = wtime() > start
            while wtime() < start:
                pass
            out[i] = np.nan if late else wtime() - start
            continue
        t0 = wtime()
        out[i] = wtime() - t0
    return 0


@njit(cache=True, nogil=True)
def native_pingpong(
    wtime, send, recv, sbuf, rbuf, count, dtype, peer, comm, status, initiator, out
):  # pragma: no cover
    """OMB osu_latency: blocking send/recv round trips; the initiator records half of each."""
    for i in range(out.size):
        if initiator:
            t0 = wtime()
            rc = send(sbuf, count, dtype, peer, _TAG_DATA, comm)
            if rc != 0:
                return rc
            rc = recv(rbuf, count, dtype, peer, _TAG_DATA, comm, status)
            out[i] = (wtime() - t0) / 2.0
        else:
            rc = recv(rbuf, count, dtype, peer, _TAG_DATA, comm, status)
            if rc != 0:
                return rc
            rc = send(sbuf, count, dtype, peer, _TAG_DATA, comm)
            out[i] = np.nan  # the responder does not time: its samples must not count
        if rc != 0:
            return rc
    return 0


@njit(cache=True, nogil=True)
def native_window(
    wtime,
    isend,
    irecv,
    waitall,
    send,
    recv,
    sbuf,
    rbuf,
    count,
    dtype,
    peer,
    comm,
    reqs,
    req_size,
    statuses,
    status,
    ack,
    ack_type,
    window,
    role,
    out,
):  # pragma: no cover
    """OMB osu_bw (role 0 sender, 1 receiver) and osu_bibw (role 2, both directions).

    Each iteration is one window of `window` non-blocking messages; the recorded time is the
    window's time divided by the window, i.e. time per message.
    """
    for i in range(out.size):
        t0 = wtime()
        nreq = 0
        if role != 0:
            for _ in range(window):
                rc = irecv(rbuf, count, dtype, peer, _TAG_DATA, comm, reqs + nreq * req_size)
                if rc != 0:
                    return rc
                nreq += 1
        if role != 1:
            for _ in range(window):
                rc = isend(sbuf, count, dtype, peer, _TAG_DATA, comm, reqs + nreq * req_size)
                if rc != 0:
                    return rc
                nreq += 1
        rc = waitall(nreq, reqs, statuses)
        if rc != 0:
            return rc
        if role == 0:
            rc = recv(ack, 4, ack_type, peer, _TAG_ACK, comm, status)
        elif role == 1:
            rc = send(ack, 4, ack_type, peer, _TAG_ACK, comm)
        if rc != 0:
            return rc
        out[i] = (wtime() - t0) / window
    return 0


def python_timed_calls(
    call: Callable[[], object], barrier: Callable[[], object], wtime: Callable[[], float], mode: int, out: np.ndarray
) -> None:
    """The Python twin of native_timed_calls, for algorithms written in Python."""
    n = len(out)
    if mode == BARRIER:
        for i in range(n):
            barrier()
            t0 = wtime()
            call()
            out[i] = wtime() - t0
    elif mode == WINDOW:
        for i in range(n):
            start = out[i]
            late = wtime() > start
            while wtime() < start:
                pass
            call()
            out[i] = np.nan if late else wtime() - start
    else:
        barrier()
        prev = wtime()
        for i in range(n):
            call()
            now = wtime()
            out[i] = now - prev
            prev = now


def python_overlap(start, barrier, wtime, seconds: float, out: np.ndarray, out_compute: np.ndarray) -> None:
    """The Python twin of native_overlap: `start()` returns the request to wait on."""
    for i in range(len(out)):
        barrier()
        t0 = wtime()
        req = start()
        tc = wtime()
        x = 1.0
        while wtime() - tc < seconds:
            x = x * 1.0000001 + 1e-9
        out_compute[i] = wtime() - tc
        req.Wait()
        out[i] = wtime() - t0


def python_empty(barrier: Callable[[], object], wtime: Callable[[], float], mode: int, out: np.ndarray) -> None:
    """The Python timer's floor: a timed region around a call that does nothing."""

    def nothing() -> None:
        return None

    python_timed_calls(nothing, barrier, wtime, mode, out)
