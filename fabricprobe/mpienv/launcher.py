"""What the launcher tells a process before MPI is initialised.

Argument errors are reported before MPI_Init (no MPI needed to reject bad input), so the
rank has to come from the launcher's environment: Open MPI/PMIx, MPICH/Intel MPI hydra (PMI),
Slurm.
"""

from __future__ import annotations

import os

_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


def env_rank() -> int:
    """This process's rank according to the launcher, 0 when not launched by one."""
    for var in _RANK_VARS:
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    return 0


def env_size() -> int | None:
    """The job size according to the launcher, None when not launched by one."""
    for var in _SIZE_VARS:
        value = os.environ.get(var)
        if value is not None and value.isdigit():
            return int(value)
    return None


def launched_by_mpiexec() -> bool:
    return env_size() is not None or any(v in os.environ for v in _RANK_VARS)
