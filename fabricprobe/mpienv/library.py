"""Which MPI library this is: its vendor and version from MPI_Get_library_version, and the libmpi
files mapped into the process (the CUDA-awareness query and MPICH's compiled-in tuning trees are read
from them)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpi4py import MPI as MPIModule


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


def library_of_this_python() -> LibraryInfo:
    """The MPI library mpi4py loads in this environment, asked in a child process without
    initialising MPI (a launcher, or MPI_Init in the parent, is not needed)."""
    import subprocess
    import sys

    from fabricprobe.errors import UsageError

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import mpi4py; mpi4py.rc.initialize = False\nfrom mpi4py import MPI; print(MPI.Get_library_version())",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if out.returncode != 0:
        raise UsageError(f"could not load MPI through mpi4py: {out.stderr.strip().splitlines()[-1:]}")
    return identify_library(out.stdout)


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
