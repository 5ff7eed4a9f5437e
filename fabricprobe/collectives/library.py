"""The MPI library's own collectives and point-to-point tests, as fabricprobe's "library" algorithm.

Two timing paths over the same buffers, both built from the collective's spec: "native" calls the C
API from a compiled loop (timing/compiled.py: what a C benchmark times), "python" calls mpi4py with
pre-built buffer specs (what a Python program pays). Results are identical; only the timed overhead
differs. The point-to-point tests are OMB's loops, natively and through mpi4py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from fabricprobe.collectives.algorithm import LIBRARY, Algorithm
from fabricprobe.memory import on_device
from fabricprobe.specs import SPECS, pt2pt
from fabricprobe.specs.base import Case
from fabricprobe.timing import loops
from fabricprobe.timing.batch import Batch, Call, TimerUnavailable, idle

if TYPE_CHECKING:
    from fabricprobe.timing import native


class MPICallError(RuntimeError):
    """An MPI call inside a timing loop returned an error code."""


def _ptr(arr: np.ndarray | None) -> int:
    return 0 if arr is None else int(arr.ctypes.data)


def _native(MPI: Any) -> native.NativeMPI:
    from fabricprobe.timing import native  # the C API's loops, once MPI has started

    nat = native.load(MPI)
    if nat is None:
        raise TimerUnavailable(f"the native timer is unavailable here: {native.unavailable_reason()}")
    return nat


def _check(rc: int, nat: native.NativeMPI) -> None:
    if rc != 0:
        raise MPICallError(nat.error_string(rc))


def _call(case: Case) -> Call:
    from mpi4py import MPI

    return SPECS[case.collective].mpi4py_call(case, MPI)


def _compiled_collective(case: Case) -> Batch:
    from mpi4py import MPI

    from fabricprobe.timing import compiled  # llvmlite's, once MPI has started (engine/session.py)

    nat = _native(MPI)
    spec = SPECS[case.collective]
    wtime, barrier, comm = nat.wtime, nat.barrier, nat.handle(case.comm)
    if spec.nonblocking or spec.persistent:
        start, args, req = spec.native_start(case, nat, MPI)
        status = np.zeros(nat.status_size, np.uint8)
        wait, status_at = nat.wait, _ptr(status)
        case.keep = (*case.keep, status)

        def started(out: np.ndarray, mode: int) -> None:
            _check(
                compiled.native_timed_start_wait(wtime, barrier, comm, start, args, wait, req, status_at, mode, out),
                nat,
            )

        return started
    func, args = spec.native_call(case, nat, MPI)

    def batch(out: np.ndarray, mode: int) -> None:
        _check(compiled.native_timed_calls(wtime, barrier, comm, func, args, mode, out), nat)

    return batch


OverlapBatch = Callable[[np.ndarray, np.ndarray], None]


def overlap_batch(case: Case, timer: str, seconds: float) -> OverlapBatch:
    """OMB's overlap loop for a non-blocking collective on case's buffers: batch(out, out_compute) starts
    the call, computes for `seconds`, waits; out gets each whole, out_compute each computation."""
    from mpi4py import MPI

    from fabricprobe.timing import compiled  # llvmlite's, once MPI has started (engine/session.py)

    spec = SPECS[case.collective]
    if timer == "native":
        nat = _native(MPI)
        start, args, req = spec.native_start(case, nat, MPI)
        status = np.zeros(nat.status_size, np.uint8)
        wtime, barrier, comm, wait = nat.wtime, nat.barrier, nat.handle(case.comm), nat.wait

        def native_batch(out: np.ndarray, out_compute: np.ndarray) -> None:
            rc = compiled.native_overlap(
                wtime, barrier, comm, start, args, wait, req, _ptr(status), seconds, out, out_compute
            )
            _check(rc, nat)

        return native_batch
    start = spec.mpi4py_start(case, MPI)

    def python_batch(out: np.ndarray, out_compute: np.ndarray) -> None:
        loops.python_overlap(start, case.comm.Barrier, MPI.Wtime, seconds, out, out_compute)

    return python_batch


def _compiled_pt2pt(case: Case) -> Batch:
    from mpi4py import MPI

    from fabricprobe.timing import compiled  # llvmlite's, once MPI has started (engine/session.py)

    if case.role < 0:
        return idle
    nat = _native(MPI)
    h = nat.handle
    comm, byte = h(case.comm), h(MPI.BYTE)
    send, recv, n, peer = _ptr(case.send), _ptr(case.recv), case.count, case.peer
    status = np.zeros(nat.status_size, np.uint8)
    if SPECS[case.collective].pingpong:
        initiator = case.role == pt2pt.ROLE_INITIATOR

        def batch(out: np.ndarray, mode: int) -> None:
            _check(
                compiled.native_pingpong(
                    nat.wtime, nat.send, nat.recv, send, recv, n, byte, peer, comm, _ptr(status), initiator, out
                ),
                nat,
            )

        return batch

    window = case.window
    reqs = np.zeros(2 * window * nat.request_size, np.uint8)
    statuses = np.zeros(2 * window * nat.status_size, np.uint8)
    ack = np.zeros(4, np.uint8)

    def batch(out: np.ndarray, mode: int) -> None:
        _check(
            compiled.native_window(
                nat.wtime,
                nat.isend,
                nat.irecv,
                nat.waitall,
                nat.send,
                nat.recv,
                send,
                recv,
                n,
                byte,
                peer,
                comm,
                _ptr(reqs),
                nat.request_size,
                _ptr(statuses),
                _ptr(status),
                _ptr(ack),
                byte,
                window,
                case.role,
                out,
            ),
            nat,
        )

    return batch


def python_pt2pt(
    case: Case,
    MPI: Any,
    before_send: Callable[[], object] | None = None,
    after_recv: Callable[[], object] | None = None,
) -> Batch:
    """OMB's loops through mpi4py. The hooks run inside the timed region around every message: the
    staged device path copies device -> pinned host before each send and back after each receive."""
    comm, peer, wtime = case.comm, case.peer, MPI.Wtime
    send = case.send if on_device(case.send) else (MPI.buffer(case.send), MPI.BYTE)
    recv = case.recv if on_device(case.recv) else (MPI.buffer(case.recv), MPI.BYTE)
    down = before_send or (lambda: None)
    up = after_recv or (lambda: None)
    Send, Recv, Isend, Irecv, Waitall = comm.Send, comm.Recv, comm.Isend, comm.Irecv, MPI.Request.Waitall
    ack = np.zeros(4, np.uint8)
    role = case.role
    if SPECS[case.collective].pingpong:

        def batch(out: np.ndarray, mode: int) -> None:
            for i in range(len(out)):
                if role == pt2pt.ROLE_INITIATOR:
                    t0 = wtime()
                    down()
                    Send(send, peer, 17)
                    Recv(recv, peer, 17)
                    up()
                    out[i] = (wtime() - t0) / 2.0
                else:
                    Recv(recv, peer, 17)
                    up()
                    down()
                    Send(send, peer, 17)
                    out[i] = np.nan

        return batch

    window = case.window

    def batch(out: np.ndarray, mode: int) -> None:
        for i in range(len(out)):
            t0 = wtime()
            reqs = []
            if role != pt2pt.ROLE_INITIATOR:
                reqs += [Irecv(recv, peer, 17) for _ in range(window)]
            if role != pt2pt.ROLE_RESPONDER:
                for _ in range(window):
                    down()
                    reqs.append(Isend(send, peer, 17))
            Waitall(reqs)
            if role != pt2pt.ROLE_INITIATOR and after_recv is not None:
                for _ in range(window):
                    up()
            if role == pt2pt.ROLE_INITIATOR:
                Recv(ack, peer, 18)
            elif role == pt2pt.ROLE_RESPONDER:
                Send(ack, peer, 18)
            out[i] = (wtime() - t0) / window

    return batch


def _python_pt2pt(case: Case) -> Batch:
    from mpi4py import MPI

    return idle if case.role < 0 else python_pt2pt(case, MPI)


SUMMARY = "the MPI library's own implementation"
ALGORITHMS = tuple(
    Algorithm(LIBRARY, spec.name, SUMMARY, compiled=_compiled_pt2pt, loop=_python_pt2pt)
    if spec.pt2pt
    else Algorithm(
        LIBRARY, spec.name, SUMMARY, call_on=_call, compiled=_compiled_collective if spec.has_native_call else None
    )
    for spec in SPECS.values()
    if spec.in_library and not spec.rma  # the one-sided tests: library_rma.py
) + (
    # The ping-pong as hand-written algorithms send their messages: through mpi4py calls. Its α is
    # what the cost model charges those algorithms per message.
    Algorithm("mpi4py", "latency", "ping-pong through mpi4py calls (Python timer)", loop=_python_pt2pt),
)
