"""Which MPI library mpi4py loaded, and whether it is the launcher's.

mpi4py's binary wheel is not built for one MPI: it loads the library it finds at run time (the MPI4PY_LIBMPI
variable, then libmpi.so, libmpi.so.12, libmpi.so.40 on the loader's path) and picks its Open MPI or
MPICH build of mpi4py.MPI to match. A launcher of one family starting ranks that loaded the other's
library starts each rank alone, in a world of 1 (docs/site.md, "mpi4py's wheel on a site's MPI").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fabricprobe.mpienv.launcher import env_size
from fabricprobe.mpienv.library import loaded_libmpi_paths
from fabricprobe.mpienv.slurm_env import in_step

# Libraries of MPICH's ABI, started by MPICH's launchers and PMI (Intel MPI, MVAPICH and Cray MPICH
# derive from MPICH)
MPICH_FAMILY = ("MPICH", "Intel MPI", "MVAPICH")
FIX = "point mpi4py at the launcher's library (MPI4PY_LIBMPI; docs/site.md, 'mpi4py's wheel on a site's MPI')"


@dataclass(frozen=True)
class Launcher:
    name: str  # as a user would call it
    family: str  # "Open MPI", "MPICH", or "" where any library may be started by it (srun, PMIx)


def family(vendor: str) -> str:
    """The launcher family a library belongs to: "Open MPI", "MPICH", or "" when unknown."""
    if vendor == "Open MPI":
        return "Open MPI"
    return "MPICH" if vendor in MPICH_FAMILY else ""


def launcher() -> Launcher | None:
    """The launcher that started this process, from the variables it sets; None outside one."""
    env = os.environ
    if "OMPI_COMM_WORLD_SIZE" in env:
        return Launcher("Open MPI's mpirun", "Open MPI")
    if in_step():
        return Launcher("srun", "")  # Slurm starts either family through its PMI plugins
    if "PMI_SIZE" in env:
        return Launcher("a PMI launcher (MPICH's or Intel MPI's mpiexec)", "MPICH")
    if "PMIX_RANK" in env:
        return Launcher("a PMIx launcher", "")
    return None


def loaded_library() -> str:
    """The MPI library file mapped into this process (the first one: the one mpi4py loaded)."""
    paths = loaded_libmpi_paths()
    return paths[0] if paths else "(no libmpi mapped)"


def mpi4py_build(MPI: Any) -> str:
    """How this mpi4py came: "binary wheel, Open MPI ABI" (the wheel's MPI.openmpi or MPI.mpich
    module), or "built for Open MPI 4.1.4" from source."""
    name = os.path.basename(getattr(MPI, "__file__", "") or "")
    for abi, label in ((".openmpi.", "Open MPI"), (".mpich.", "MPICH")):
        if abi in name:
            return f"binary wheel, {label} ABI"
    try:
        vendor, version = MPI.get_vendor()
    except AttributeError:
        return "built from source"
    return f"built for {vendor} {'.'.join(map(str, version))}"


def mismatch(vendor: str, library: str, world: int) -> str:
    """One line when the library loaded is not the launcher's (a family apart, or a world of 1 where
    the launcher started more); "" when they agree or nothing can be told."""
    started = launcher()
    if started is None:
        return ""
    launched = env_size()
    apart = bool(started.family and family(vendor) and started.family != family(vendor))
    if launched is not None and launched != world and apart:
        return (
            f"{started.name} launched {launched} ranks but mpi4py loaded {vendor} ({library}), so each rank "
            f"started alone in a world of {world}: {FIX}"
        )
    if apart:
        return f"{started.name} is {started.family}'s, but mpi4py loaded {vendor} ({library}): {FIX}"
    return ""
