"""Open MPI's pml monitoring read inside a job, through MPI_T performance variables: the bytes and
messages this rank has sent to each peer, read before and after a call, so that one job can
fingerprint many calls (tuning.verify.probe's grouped mode).

Why here and not the file the monitoring writes at MPI_Finalize (fingerprint.monitoring_env): the file
holds one total per job, so each fingerprint cost a launch of its own. The variables
`pml_monitoring_messages_count` and `pml_monitoring_messages_size` (class SIZE, bound to a
communicator, one element per peer of it) count what the file's "I" and "E" lines count together
when the monitoring is on at level 1 (`OMPI_MCA_pml_monitoring_enable=1`: internal and external
messages together; at level 2 the variables leave the internal ones out). Measured on the Open MPI 5.0.11 wheel,
4 ranks, allreduce and bcast at 8 B and 1 MiB: the differences read around one call were the file's
lines of a job of that one call, pair for pair. The counts are per process and peer, whatever the
communicator the messages went on; the binding only names the peers (use MPI_COMM_WORLD).

Open MPI's ABI only (the monitoring is Open MPI's): the session, handles and communicator are
pointers, MPI_T_PVAR_CLASS_SIZE is 2."""

from __future__ import annotations

import ctypes
from typing import Any

from fabricprobe.mpienv.mpit import MpitError

_CLASS_SIZE = 2  # MPI_T_PVAR_CLASS_SIZE in Open MPI's mpi.h
COUNT = "pml_monitoring_messages_count"
SIZE = "pml_monitoring_messages_size"


class MessageCounters:
    """Per-peer (bytes, messages) sent by this rank, read at will (a pvar session with both counters
    started). Use as a context manager."""

    def __init__(self, MPI: Any, comm: Any) -> None:
        if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_int):
            raise MpitError("pml monitoring counters are Open MPI's; this library has the MPICH ABI")
        self._lib = ctypes.CDLL(MPI.__file__)  # dlsym on the extension also searches libmpi
        provided = ctypes.c_int()
        self._call("MPI_T_init_thread", ctypes.c_int(0), ctypes.byref(provided))
        self._session = ctypes.c_void_p()
        self._call("MPI_T_pvar_session_create", ctypes.byref(self._session))
        self._comm = ctypes.c_void_p(MPI._handleof(comm))
        self.peers = comm.size
        self._count = self._start(COUNT)
        self._size = self._start(SIZE)

    def _call(self, name: str, *args: Any) -> None:
        rc = getattr(self._lib, name)(*args)
        if rc != 0:
            raise MpitError(f"{name} failed with MPI error {rc}")

    def _start(self, name: str) -> ctypes.c_void_p:
        index, handle, count = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_int()
        rc = self._lib.MPI_T_pvar_get_index(name.encode(), ctypes.c_int(_CLASS_SIZE), ctypes.byref(index))
        if rc != 0:
            raise MpitError(f"no performance variable {name} (is OMPI_MCA_pml_monitoring_enable set?)")
        self._call(
            "MPI_T_pvar_handle_alloc",
            self._session,
            index,
            ctypes.byref(self._comm),
            ctypes.byref(handle),
            ctypes.byref(count),
        )
        if count.value != self.peers:
            raise MpitError(f"{name} has {count.value} elements for {self.peers} peers")
        self._call("MPI_T_pvar_start", self._session, handle)
        return handle

    def read(self) -> list[tuple[int, int]]:
        """(bytes, messages) sent to each peer so far, by peer rank."""
        counts = (ctypes.c_ulong * self.peers)()
        sizes = (ctypes.c_ulong * self.peers)()
        self._call("MPI_T_pvar_read", self._session, self._count, counts)
        self._call("MPI_T_pvar_read", self._session, self._size, sizes)
        return list(zip((int(s) for s in sizes), (int(c) for c in counts)))

    def close(self) -> None:
        if self._session.value:
            self._lib.MPI_T_pvar_session_free(ctypes.byref(self._session))
            self._lib.MPI_T_finalize()
            self._session = ctypes.c_void_p()

    def __enter__(self) -> "MessageCounters":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def sent_between(before: list[tuple[int, int]], after: list[tuple[int, int]], rank: int) -> list[tuple]:
    """(source, peer, bytes, messages) of what `rank` sent between two reads, pairs with none left out."""
    return [
        (rank, peer, a[0] - b[0], a[1] - b[1])
        for peer, (b, a) in enumerate(zip(before, after))
        if (a[0] - b[0], a[1] - b[1]) != (0, 0)
    ]
