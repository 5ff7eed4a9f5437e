"""Launching fabricprobe itself as an MPI job from a driver process that is not a rank: tune-sweep's
jobs and `sweep --launches K`. The job's options travel in a file written beside the results file,
and the launch goes through mpienv.launcher (mpiexec, or an srun step filling an allocation's first
nodes)."""

from __future__ import annotations

import os
import sys
import tempfile

from fabricprobe import interrupts
from fabricprobe.console import warn_line
from fabricprobe.errors import INTERRUPTED_STATUSES, LauncherError, StorageError, UsageError
from fabricprobe.mpienv import orphans, slurm_env
from fabricprobe.mpienv.launcher import run_launch, signal_name, stream_launch
from fabricprobe.mpienv.provenance import utc_now


def run_fabricprobe(base: list[str], args: list[str], env: dict[str, str], timeout: float, on_line=None):
    """Launch `fabricprobe ARGS` on the ranks `base` ("... -n N": launcher()) starts, with `env` added to
    this environment; under srun the step fills the allocation's first nodes. Returns the finished
    process (output captured; each stderr line also to on_line as it comes, when given) or raises
    subprocess.TimeoutExpired."""
    argv = [*base[:-2], *slurm_env.step_nodes(base[:-2], int(base[-1])), *base[-2:]]
    argv += [sys.executable, "-m", "fabricprobe", *args]
    full = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **env}
    output = args[args.index("-o") + 1] if "-o" in args else None
    before = _run_ids(output)
    try:
        with orphans.ended_if_interrupted():
            if on_line is not None:
                out = stream_launch(argv, on_line, env=full, timeout=timeout)
            else:
                out = run_launch(argv, env=full, timeout=timeout)
    except KeyboardInterrupt as exc:
        _interrupted_runs_say_so(output, before, interrupts.said(exc))
        raise
    if out.returncode < 0:  # the launcher itself died of a signal: its ranks would run on
        ended = orphans.end()
        raise LauncherError(
            f"the launcher {os.path.basename(argv[0])} was ended by {signal_name(-out.returncode)}; "
            f"{ended} processes it left were ended; every point measured before is kept"
        )
    if out.returncode in INTERRUPTED_STATUSES:  # the job was interrupted (scancel of a step): so is this
        stop = interrupts.Interrupted(out.returncode - 128)
        _interrupted_runs_say_so(output, before, interrupts.said(stop))
        raise stop
    return out


def _written(output: str | None) -> bool:
    from fabricprobe.store.journal import journal_path

    return bool(output) and (os.path.exists(output) or os.path.exists(journal_path(output)))


def _run_ids(output: str | None) -> set[str] | None:
    """The runs already in output, by name, none read (None where it cannot be read: nothing is marked
    then). A tune-sweep launches many jobs into one file, each of them after this."""
    from fabricprobe.store import run_ids

    try:
        return set(run_ids(output)) if _written(output) else set()
    except (UsageError, StorageError, OSError):
        return None


def _interrupted_runs_say_so(output: str | None, before: set[str] | None, reason: str) -> None:
    """A run the interrupted job started and left "running" is marked "interrupted" by the driver once
    every rank has ended. Rank 0 marks it itself when it can, but Open MPI's launcher follows the
    SIGTERM it forwards with SIGKILL 0.2 s later: under load rank 0 had not written (tests/
    test_interrupts.py, 3 clean-clone CI runs). Its points are all in the file already."""
    from fabricprobe.store import ResultsWriter, load_runs
    from fabricprobe.store.schema import STATUS_INTERRUPTED, STATUS_RUNNING

    if before is None or not _written(output):
        return
    try:
        left = [r.id for r in load_runs(output) if r.id not in before and r.status == STATUS_RUNNING]
        for run_id in left:
            with ResultsWriter(output) as writer:
                writer.attach(run_id)
                writer.update_run({"status": STATUS_INTERRUPTED, "status_reason": reason, "ended": utc_now()})
    except (UsageError, StorageError, OSError) as exc:
        warn_line(f"{output}: its interrupted run could not be marked so ({exc}); its points are kept")


def job_file(output: str, content: str) -> str:
    """A job's file, written beside the results file, not in /tmp: under Slurm every node may have a
    /tmp of its own (the lab's do), and the ranks on other nodes must read it."""
    folder = os.path.dirname(os.path.abspath(output))
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix=".fabricprobe-job-", dir=folder, delete=False) as f:
        f.write(content)
    return f.name
