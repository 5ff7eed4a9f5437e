"""`fabricprobe ARGS` run inside the test's own process, for the commands that only read and write files
(report, compare, plot, model, repair, tune-eval): the same `fabricprobe.cli.main.main` the command
line runs, its stdout and stderr captured, its exit status returned, in a fraction of the second a
new interpreter pays for Python, numpy, numba and h5py (docs/testing.md, "Where the time goes").

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
    args: list[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> subprocess.CompletedProcess:
    """`fabricprobe ARGS` through cli.main.main in this process, as a CompletedProcess."""
    from fabricprobe.cli import main as cli_main

    had_mpi = "mpi4py.MPI" in sys.modules
    out, err = io.StringIO(), io.StringIO()
    with _environment(env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main.main([str(a) for a in args])
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if not had_mpi and "mpi4py.MPI" in sys.modules:
        raise StartedMpi(f"`fabricprobe {' '.join(map(str, args))}` started MPI: run it with process=True")
    return subprocess.CompletedProcess(["fabricprobe", *map(str, args)], code, out.getvalue(), err.getvalue())
