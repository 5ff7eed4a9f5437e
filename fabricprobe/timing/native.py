"""The MPI library's C entry points, typed for the compiled timing loops
(timing/compiled.py, which reads each function's argtypes).

mpi4py parses every buffer argument on every call (~0.4-1 us), which would be timed along
with an 8-byte collective that itself takes ~0.3 us. The native timer calls the C functions
of the very library mpi4py loaded (looked up through mpi4py's extension module), so the timed
region holds exactly what a C benchmark's does. Handles come from mpi4py; their C type
(int in the MPICH ABI, a pointer in Open MPI's) is read from mpi4py at run time.
"""

from __future__ import annotations

import ctypes
from typing import Any

_INT = ctypes.c_int
_PTR = ctypes.c_void_p
_DOUBLE = ctypes.c_double
_AINT = ctypes.c_ssize_t  # MPI_Aint: a signed integer the width of an address in both ABIs


def _handle_type(size: int) -> Any:
    return _INT if size == ctypes.sizeof(_INT) else _PTR


class NativeMPI:
    """Typed ctypes functions of the loaded MPI library, plus the handle helpers they need."""

    def __init__(self, MPI: Any) -> None:
        self.MPI = MPI
        lib = ctypes.CDLL(MPI.__file__)  # dlsym on the extension also searches libmpi
        comm = _handle_type(MPI._sizeof(MPI.Comm))
        dtype = _handle_type(MPI._sizeof(MPI.Datatype))
        op = _handle_type(MPI._sizeof(MPI.Op))
        self.request_size = MPI._sizeof(MPI.Request)
        self.status_size = MPI._sizeof(MPI.Status)

        def fn(name: str, restype: Any, *argtypes: Any) -> Any:
            f = getattr(lib, name)
            f.restype = restype
            f.argtypes = list(argtypes)
            return f

        self.wtime = fn("MPI_Wtime", _DOUBLE)
        self.barrier = fn("MPI_Barrier", _INT, comm)
        self.allreduce = fn("MPI_Allreduce", _INT, _PTR, _PTR, _INT, dtype, op, comm)
        self.reduce = fn("MPI_Reduce", _INT, _PTR, _PTR, _INT, dtype, op, _INT, comm)
        self.bcast = fn("MPI_Bcast", _INT, _PTR, _INT, dtype, _INT, comm)
        self.allgather = fn("MPI_Allgather", _INT, _PTR, _INT, dtype, _PTR, _INT, dtype, comm)
        self.alltoall = fn("MPI_Alltoall", _INT, _PTR, _INT, dtype, _PTR, _INT, dtype, comm)
        self.gather = fn("MPI_Gather", _INT, _PTR, _INT, dtype, _PTR, _INT, dtype, _INT, comm)
        self.scatter = fn("MPI_Scatter", _INT, _PTR, _INT, dtype, _PTR, _INT, dtype, _INT, comm)
        self.gatherv = fn("MPI_Gatherv", _INT, _PTR, _INT, dtype, _PTR, _PTR, _PTR, dtype, _INT, comm)
        self.scatterv = fn("MPI_Scatterv", _INT, _PTR, _PTR, _PTR, dtype, _PTR, _INT, dtype, _INT, comm)
        self.allgatherv = fn("MPI_Allgatherv", _INT, _PTR, _INT, dtype, _PTR, _PTR, _PTR, dtype, comm)
        self.alltoallv = fn("MPI_Alltoallv", _INT, _PTR, _PTR, _PTR, dtype, _PTR, _PTR, _PTR, dtype, comm)
        self.reduce_scatter_block = fn("MPI_Reduce_scatter_block", _INT, _PTR, _PTR, _INT, dtype, op, comm)
        self.send = fn("MPI_Send", _INT, _PTR, _INT, dtype, _INT, _INT, comm)
        self.recv = fn("MPI_Recv", _INT, _PTR, _INT, dtype, _INT, _INT, comm, _PTR)
        self.isend = fn("MPI_Isend", _INT, _PTR, _INT, dtype, _INT, _INT, comm, _PTR)
        self.irecv = fn("MPI_Irecv", _INT, _PTR, _INT, dtype, _INT, _INT, comm, _PTR)
        self.waitall = fn("MPI_Waitall", _INT, _INT, _PTR, _PTR)
        self.wait = fn("MPI_Wait", _INT, _PTR, _PTR)
        win = _handle_type(MPI._sizeof(MPI.Win))
        rma = (_INT, _PTR, _INT, dtype, _INT, _AINT, _INT, dtype, win)
        self.put, self.get = fn("MPI_Put", *rma), fn("MPI_Get", *rma)
        self.win_flush = fn("MPI_Win_flush", _INT, _INT, win)
        self.accumulate = fn("MPI_Accumulate", *rma[:-1], op, win)
        self.fetch_and_op = fn("MPI_Fetch_and_op", _INT, _PTR, _PTR, dtype, _INT, _AINT, op, win)
        self.compare_and_swap = fn("MPI_Compare_and_swap", _INT, _PTR, _PTR, _PTR, dtype, _INT, _AINT, win)
        self.start = fn("MPI_Start", _INT, _PTR)
        self.in_place = int(MPI.IN_PLACE)
        self._fn = fn

    def nonblocking(self, blocking: Any) -> Any:
        """The non-blocking twin of a blocking collective's typed function (MPI_Allreduce ->
        MPI_Iallreduce): the same arguments and a request pointer after them."""
        name = "MPI_I" + blocking.__name__[len("MPI_") :].lower()
        return self._fn(name, _INT, *blocking.argtypes, _PTR)

    def handle(self, obj: Any) -> int:
        """The C handle of an mpi4py object (communicator, datatype, op) as an integer."""
        return int(self.MPI._handleof(obj))

    def error_string(self, code: int) -> str:
        try:
            return str(self.MPI.Get_error_string(code))
        except Exception:  # a bad code must not hide the original failure
            return f"MPI error {code}"


_cached: NativeMPI | None = None
_failure: str | None = None


def load(MPI: Any) -> NativeMPI | None:
    """The native binding, or None when this MPI/mpi4py combination cannot provide it."""
    global _cached, _failure
    if _cached is None and _failure is None:
        try:
            _cached = NativeMPI(MPI)
        except (OSError, AttributeError, TypeError) as exc:
            _failure = f"{type(exc).__name__}: {exc}"
    return _cached


def unavailable_reason() -> str | None:
    return _failure


def failure(MPI: Any) -> str | None:
    """Why the native binding cannot load here (None when it loads): what the timer choice needs."""
    load(MPI)
    return _failure
