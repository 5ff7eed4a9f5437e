"""Launching fabricprobe itself as an MPI job from a driver process that is not a rank: tune-sweep's
jobs and `sweep --launches K`. The job's options travel in a file written beside the results file,
and the launch goes through mpienv.launcher (mpiexec, or an srun step filling an allocation's first
nodes)."""

from __future__ import annotations

import os
import sys
import tempfile

from fabricprobe import interrupts
from fabricprobe.errors import INTERRUPTED_STATUSES, LauncherError
from fabricprobe.mpienv import orphans, slurm_env
from fabricprobe.mpienv.launcher import run_launch, signal_name, stream_launch


def run_fabricprobe(base: list[str], args: list[str], env: dict[str, str], timeout: float, on_line=None):
    """Launch `fabricprobe ARGS` on the ranks `base` ("... -n N": launcher()) starts, with `env` added to
    this environment; under srun the step fills the allocation's first nodes. Returns the finished
    process (output captured; each stderr line also to on_line as it comes, when given) or raises
    subprocess.TimeoutExpired."""
    argv = [*base[:-2], *slurm_env.step_nodes(base[:-2], int(base[-1])), *base[-2:]]
    argv += [sys.executable, "-m", "fabricprobe", *args]
    full = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **env}
    with orphans.ended_if_interrupted():
        if on_line is not None:
            out = stream_launch(argv, on_line, env=full, timeout=timeout)
        else:
            out = run_launch(argv, env=full, timeout=timeout)
    if out.returncode < 0:  # the launcher itself died of a signal: its ranks would run on
        ended = orphans.end()
        raise LauncherError(
            f"the launcher {os.path.basename(argv[0])} was ended by {signal_name(-out.returncode)}; "
            f"{ended} processes it left were ended; every point measured before is kept"
        )
    if out.returncode in INTERRUPTED_STATUSES:  # the job was interrupted (scancel of a step): so is this
        raise interrupts.Interrupted(out.returncode - 128)
    return out


def job_file(output: str, content: str) -> str:
    """A job's file, written beside the results file, not in /tmp: under Slurm every node may have a
    /tmp of its own (the lab's do), and the ranks on other nodes must read it."""
    folder = os.path.dirname(os.path.abspath(output))
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix=".fabricprobe-job-", dir=folder, delete=False) as f:
        f.write(content)
    return f.name
