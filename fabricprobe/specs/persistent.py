"""Persistent collectives (MPI 4: MPI_<Coll>_init once, then MPI_Start and MPI_Wait per call), named
as OMB names them (allreduce_persistent, ...).

Like the non-blocking ones (specs/nonblocking.py), each is its blocking twin's spec with the call
derived from the twin's: mpi4py's <Coll>_init takes the blocking call's arguments. The request is made
once per point, outside the timed calls, as a program that uses persistent collectives makes it once
and starts it every step; the library may choose its algorithm at that moment, which is what these
points measure against the blocking ones. A library without MPI 4's persistent collectives gives
each point an error that says so.
"""

from __future__ import annotations

from typing import Any

from fabricprobe.specs.base import CollectiveSpec
from fabricprobe.specs.nonblocking import Started, _parts


class Persistent(Started):
    persistent = True

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._open: list[Any] = []  # the requests made for the current point, freed by release()

    def release(self, case) -> None:
        """Free the point's requests: a persistent request outlives its calls until freed (MPICH warns
        of each one still there when its communicator is freed)."""
        while self._open:
            self._open.pop().Free()

    def _request(self, case, MPI, op=None) -> Any:
        method, args = _parts(self.blocking.mpi4py_call(case, MPI, op))
        init = getattr(case.comm, method.__name__ + "_init", None)
        if init is None:
            raise RuntimeError(f"mpi4py {MPI.Get_library_version()[:40]!r}: no {method.__name__}_init")
        request = init(*args)
        self._open.append(request)
        return request

    def mpi4py_start(self, case, MPI, op=None):
        request = self._request(case, MPI, op)

        def start() -> Any:
            request.Start()
            return request

        return start

    def native_start(self, case, nat, MPI) -> tuple[Any, tuple, int]:
        """(MPI_Start, (the request's address,), that address): the request made through mpi4py, its
        handle's address read from it (mpi4py's _addressof), kept until release()."""
        request = self._request(case, MPI)
        address = int(MPI._addressof(request))
        return nat.start, (address,), address


# OMB's titles (c/mpi/collective/persistent/osu_*_persistent.c, 7.4). OMB has no persistent
# reduce_scatter_block (its reduce_scatter_persistent is the vector form fabricprobe does not measure),
# and the name would not fit the schema's 24 bytes: none here.
_TITLES = {
    "allreduce": "Allreduce Persistent Latency Test",
    "reduce": "Reduce Persistent Latency Test",
    "bcast": "Broadcast Persistent Latency Test",
    "allgather": "Allgather Persistent Latency Test",
    "alltoall": "All-to-All Personalized Exchange Persistent Latency Test",
    "gather": "Gather Persistent Latency Test",
    "scatter": "Scatter Persistent Latency Test",
    "gatherv": "Gatherv Persistent Latency Test",
    "scatterv": "Scatterv Persistent Latency Test",
    "allgatherv": "Allgatherv Persistent Latency Test",
    "alltoallv": "All-to-Allv Personalized Exchange Persistent Latency Test",
    "barrier": "Barrier Persistent Latency Test",
}


def persistent_specs(blocking: dict[str, CollectiveSpec]) -> tuple[Persistent, ...]:
    """The persistent twin of each blocking collective OMB has one of, in `blocking`'s order."""
    return tuple(Persistent(s, name + "_persistent", _TITLES[name]) for name, s in blocking.items() if name in _TITLES)
