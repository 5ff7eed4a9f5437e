"""MPI initialisation with an explicit thread level, and library identification.

mpi4py asks for MPI_THREAD_MULTIPLE unless told otherwise, which moves MPICH onto slower
small-message paths (~5x at 8 B). fabricprobe always requests a level explicitly and records
what the library provided.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpi4py import MPI as MPIModule

THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")


def init_mpi(thread_level: str = "single") -> "MPIModule":
    """Import mpi4py's MPI module, initialising MPI at the requested thread level."""
    if thread_level not in THREAD_LEVELS:
        raise ValueError(f"unknown thread level {thread_level!r}")
    import mpi4py

    if "mpi4py.MPI" not in sys.modules:
        mpi4py.rc.thread_level = thread_level
        # Our own error handling: MPI errors become Python exceptions, not silent aborts.
        mpi4py.rc.errors = "exception"
    from mpi4py import MPI

    return MPI


def provided_thread_level(MPI: "MPIModule") -> str:
    names = {
        MPI.THREAD_SINGLE: "single",
        MPI.THREAD_FUNNELED: "funneled",
        MPI.THREAD_SERIALIZED: "serialized",
        MPI.THREAD_MULTIPLE: "multiple",
    }
    return names.get(MPI.Query_thread(), str(MPI.Query_thread()))


@dataclass(frozen=True)
class LibraryInfo:
    vendor: str  # "Open MPI", "MPICH", "Intel MPI", "MVAPICH", or "unknown"
    version: str  # the vendor's version number, e.g. "5.0.11"
    version_string: str  # MPI_Get_library_version, verbatim
    mpi_standard: str  # e.g. "3.1"


def identify_library(version_string: str, standard: tuple[int, int] = (0, 0)) -> LibraryInfo:
    """Name the MPI library from its MPI_Get_library_version string."""
    text = version_string.replace("\x00", "").strip()  # Open MPI's string ends in a NUL
    patterns = (
        ("Intel MPI", r"Intel\(R\) MPI Library (?:for \S+ OS, )?(?:Version )?(\d[\w.]*)"),
        ("Open MPI", r"Open MPI v([\w.]+)"),
        ("MVAPICH", r"MVAPICH2? Version:\s*([\w.]+)"),
        ("MPICH", r"MPICH Version:\s*([\w.]+)"),
    )
    for vendor, pattern in patterns:
        match = re.search(pattern, text)
        if match:
            return LibraryInfo(vendor, match.group(1), text, f"{standard[0]}.{standard[1]}")
    return LibraryInfo("unknown", "", text, f"{standard[0]}.{standard[1]}")


def library_info(MPI: "MPIModule") -> LibraryInfo:
    return identify_library(MPI.Get_library_version(), MPI.Get_version())


def loaded_libmpi_paths() -> list[str]:
    """The MPI libraries mapped into this process (libmpi.so.*, libmpich.so.*), in load order."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                name = os.path.basename(path)
                if "libmpi" in name and ".so" in name and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    return paths
