"""The library in use, by vendor: each is described in its own file (openmpi.py, mpich.py, intel.py):
its algorithms, read from the library's own tools at run time, and how to force one."""

from __future__ import annotations

from fabricprobe.errors import UsageError
from fabricprobe.tuning.plan.intel import IntelMPI
from fabricprobe.tuning.plan.library import Library
from fabricprobe.tuning.plan.mpich import MPICH
from fabricprobe.tuning.plan.openmpi import OpenMPI


def for_vendor(vendor: str) -> Library:
    if vendor == "Open MPI":
        return OpenMPI()
    if vendor == "MPICH":
        return MPICH()
    if vendor == "Intel MPI":
        return IntelMPI()
    raise UsageError(f"tuning supports Open MPI, MPICH and Intel MPI; this MPI is {vendor!r}")
