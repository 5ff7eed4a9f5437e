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


# Open MPI 5's launcher, on a loaded machine, now and then fails before any rank exists ("The PMIx
# server's listener thread failed to start", exit 213: it failed CI runs, in the tests' jobs and in
# tune's fingerprint probes). No rank ran, so launching again hides nothing; any other failure stands.
LAUNCH_ATTEMPTS = 3
LAUNCHER_START_FAILURES = ("The PMIx server's listener thread failed to start",)


def launcher_failed_to_start(output: str) -> bool:
    """Whether mpiexec's output says it failed before any rank existed (then launching again is safe)."""
    return any(t in (output or "") for t in LAUNCHER_START_FAILURES)


def run_launch(argv: list[str], **kwargs):
    """subprocess.run of an mpiexec command line (text, output captured), launched again only when
    mpiexec failed before any rank ran."""
    import subprocess

    for _ in range(LAUNCH_ATTEMPTS):
        out = subprocess.run(argv, capture_output=True, text=True, **kwargs)
        # under `script` (a terminal for the tests) mpiexec's stderr arrives in stdout
        if out.returncode == 0 or not launcher_failed_to_start((out.stderr or "") + (out.stdout or "")):
            return out
    return out
