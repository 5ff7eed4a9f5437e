"""`fabricprobe ARGS` run inside the test's own process, for the commands that only read and write files
(report, compare, plot, model, repair, tune-eval): the same `fabricprobe.cli.main.main` the command
line runs, its stdout and stderr captured, its exit status returned, in a fraction of the second a
new interpreter pays for Python, numpy, numba and h5py (docs/testing.md, "How the suite stays fast").

What a process alone can show stays a process (`run_local(..., process=True)`): `python -m`, the
entry point, signals, a launcher's environment. A command that would start MPI here fails the test
instead: MPI_Init in the test process would outlive the test."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

# Commands that never start MPI, a launcher or a lab: they read results files and write reports.
IN_PROCESS = frozenset({"report", "compare", "plot", "model", "repair", "tune-eval"})


class StartedMpi(AssertionError):
    """An in-process command imported mpi4py.MPI (which runs MPI_Init): run it as a process."""


class Tripwire(BaseException):
    """A command that was to be refused reached MPI_Init or started a process (a BaseException, so that
    the command line's handler of internal errors lets it through to fail the test)."""


@contextlib.contextmanager
def _tripwires():
    """MPI_Init and every new process raise Tripwire: for commands that must be refused before either."""
    import fabricprobe.mpienv.init as init

    def trip(*args, **kwargs):
        raise Tripwire(f"got past the checks: reached {args[:1]}")

    saved = init.init_mpi, subprocess.run, subprocess.Popen
    init.init_mpi, subprocess.run, subprocess.Popen = trip, trip, trip
    try:
        yield
    finally:
        init.init_mpi, subprocess.run, subprocess.Popen = saved


@contextlib.contextmanager
def _environment(env: dict[str, str] | None, cwd: str | Path | None):
    saved = dict(os.environ)
    here = os.getcwd()
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)


def run_in_process(
    args: list[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None, refused: bool = False
) -> subprocess.CompletedProcess:
    """`fabricprobe ARGS` through cli.main.main in this process, as a CompletedProcess. `refused`: the
    command must be refused before MPI or any process starts (both are tripwires then)."""
    from fabricprobe.cli import main as cli_main

    had_mpi = "mpi4py.MPI" in sys.modules
    out, err = io.StringIO(), io.StringIO()
    trips = _tripwires() if refused else contextlib.nullcontext()
    with _environment(env, cwd), trips, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main.main([str(a) for a in args])
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if not had_mpi and "mpi4py.MPI" in sys.modules:
        raise StartedMpi(f"`fabricprobe {' '.join(map(str, args))}` started MPI: run it with process=True")
    return subprocess.CompletedProcess(["fabricprobe", *map(str, args)], code, out.getvalue(), err.getvalue())
