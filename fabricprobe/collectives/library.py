"""The MPI library's own collectives and point-to-point tests, as fabricprobe's "library" algorithm.

Two timing paths over the same buffers: "native" calls the C API from a Numba loop (what a
C benchmark times), "python" calls mpi4py with pre-built buffer specs (what a Python
program pays). Results are identical; only the timed overhead differs.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

from fabricprobe.collectives.base import LIBRARY, Algorithm, register
from fabricprobe.mpienv.datatypes import mpi_datatype, mpi_op
from fabricprobe.specs import SPECS, pt2pt
from fabricprobe.specs.base import Case
from fabricprobe.timing import loops, native
from fabricprobe.timing.batch import Batch, python_batch


class MPICallError(RuntimeError):
    """An MPI call inside a timing loop returned an error code."""


def _ptr(arr: np.ndarray | None) -> int:
    return 0 if arr is None else int(arr.ctypes.data)


def _native_call(case: Case, nat: native.NativeMPI, MPI: Any) -> tuple[Any, tuple]:
    """The C function and its arguments for one call of `case`'s collective."""
    h = nat.handle
    comm = h(case.comm)
    dt = h(mpi_datatype(MPI, case.dtype_name))
    send = nat.in_place if case.send is None else _ptr(case.send)
    recv, n, coll = _ptr(case.recv), case.count, case.collective
    if coll == "allreduce":
        return nat.allreduce, (send, recv, n, dt, h(mpi_op(MPI, case.op)), comm)
    if coll == "reduce":
        return nat.reduce, (send, recv, n, dt, h(mpi_op(MPI, case.op)), case.root, comm)
    if coll == "bcast":
        return nat.bcast, (recv, n, dt, case.root, comm)
    if coll == "allgather":
        return nat.allgather, (send, n, dt, recv, n, dt, comm)
    if coll == "reduce_scatter":
        return nat.reduce_scatter_block, (send, recv, n, dt, h(mpi_op(MPI, case.op)), comm)
    if coll == "alltoall":
        return nat.alltoall, (send, n, dt, recv, n, dt, comm)
    if coll == "barrier":
        return nat.barrier, (comm,)
    raise ValueError(f"no native call for {coll}")


def python_call(case: Case, MPI: Any = None) -> Callable[[], object]:
    """The mpi4py call for one call of `case`'s collective, with buffer specs built once."""
    if MPI is None:
        from mpi4py import MPI
    comm = case.comm
    dt = mpi_datatype(MPI, case.dtype_name)
    send = MPI.IN_PLACE if case.send is None else (_buffer(case.send, MPI), dt)
    recv = (_buffer(case.recv, MPI), dt)
    coll = case.collective
    if coll == "allreduce":
        return partial(comm.Allreduce, send, recv, mpi_op(MPI, case.op))
    if coll == "reduce":
        return partial(comm.Reduce, send, recv, mpi_op(MPI, case.op), case.root)
    if coll == "bcast":
        return partial(comm.Bcast, recv, case.root)
    if coll == "allgather":
        return partial(comm.Allgather, send, recv)
    if coll == "reduce_scatter":
        return partial(comm.Reduce_scatter_block, send, recv, mpi_op(MPI, case.op))
    if coll == "alltoall":
        return partial(comm.Alltoall, send, recv)
    if coll == "barrier":
        return comm.Barrier
    raise ValueError(f"no mpi4py call for {coll}")


def _buffer(arr: Any, MPI: Any) -> Any:
    """Host arrays as MPI buffers built once; device arrays go to mpi4py as they are (it reads their
    __cuda_array_interface__ or DLPack, and hands the device pointer to a CUDA-aware library)."""
    return MPI.buffer(arr) if isinstance(arr, np.ndarray) else arr


def _check(rc: int, nat: native.NativeMPI) -> None:
    if rc != 0:
        raise MPICallError(nat.error_string(rc))


def _bind_collective(case: Case, timer: str) -> Batch:
    from mpi4py import MPI

    nat = native.load(MPI) if timer == "native" else None
    if nat is None:
        return python_batch(python_call(case, MPI), case.comm)
    func, args = _native_call(case, nat, MPI)
    wtime, barrier, comm = nat.wtime, nat.barrier, nat.handle(case.comm)

    def batch(out: np.ndarray, mode: int) -> None:
        _check(loops.native_timed_calls(wtime, barrier, comm, func, args, mode, out), nat)

    return batch


def _idle(out: np.ndarray, mode: int) -> None:
    out.fill(np.nan)


def _bind_pt2pt(case: Case, timer: str) -> Batch:
    from mpi4py import MPI

    if case.role < 0:
        return _idle
    nat = native.load(MPI) if timer == "native" else None
    if nat is None:
        return python_pt2pt(case, MPI)
    h = nat.handle
    comm, byte = h(case.comm), h(MPI.BYTE)
    send, recv, n, peer = _ptr(case.send), _ptr(case.recv), case.count, case.peer
    status = np.zeros(nat.status_size, np.uint8)
    if case.collective == "latency":
        initiator = case.role == pt2pt.ROLE_INITIATOR

        def batch(out: np.ndarray, mode: int) -> None:
            _check(loops.native_pingpong(nat.wtime, nat.send, nat.recv, send, recv, n, byte, peer, comm,
                                         _ptr(status), initiator, out), nat)
        return batch

    window = case.window
    reqs = np.zeros(2 * window * nat.request_size, np.uint8)
    statuses = np.zeros(2 * window * nat.status_size, np.uint8)
    ack = np.zeros(4, np.uint8)

    def batch(out: np.ndarray, mode: int) -> None:
        _check(loops.native_window(nat.wtime, nat.isend, nat.irecv, nat.waitall, nat.send, nat.recv,
                                   send, recv, n, byte, peer, comm, _ptr(reqs), nat.request_size,
                                   _ptr(statuses), _ptr(status), _ptr(ack), byte, window, case.role, out), nat)
    return batch


def python_pt2pt(case: Case, MPI: Any, before_send: Callable[[], object] | None = None,
                 after_recv: Callable[[], object] | None = None) -> Batch:
    """OMB's loops through mpi4py. The hooks run inside the timed region around every message: the
    staged device path copies device -> pinned host before each send and back after each receive."""
    comm, peer, wtime = case.comm, case.peer, MPI.Wtime
    send = (_buffer(case.send, MPI), MPI.BYTE)
    recv = (_buffer(case.recv, MPI), MPI.BYTE)
    down = before_send or (lambda: None)
    up = after_recv or (lambda: None)
    Send, Recv, Isend, Irecv, Waitall = comm.Send, comm.Recv, comm.Isend, comm.Irecv, MPI.Request.Waitall
    ack = np.zeros(4, np.uint8)
    role = case.role
    if case.collective == "latency":
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


for _spec in SPECS.values():
    if _spec.local or _spec.sparse:  # MPI has no sparse allreduce; local tests have their own kernels
        continue
    register(Algorithm(
        name=LIBRARY,
        collective=_spec.name,
        summary="the MPI library's own implementation",
        binder=_bind_pt2pt if _spec.pt2pt else _bind_collective,
        caller=None if _spec.pt2pt else python_call,
        native=True,
    ))


def _bind_mpi4py_pt2pt(case: Case, timer: str) -> Batch:
    from mpi4py import MPI

    return _idle if case.role < 0 else python_pt2pt(case, MPI)


# The ping-pong as hand-written algorithms send their messages: through mpi4py calls. Its α is
# what the cost model charges those algorithms per message.
register(Algorithm(name="mpi4py", collective="latency", summary="ping-pong through mpi4py calls (Python timer)",
                   binder=_bind_mpi4py_pt2pt))
